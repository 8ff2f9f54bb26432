// etcd's --experimental-corrupt-check-time: while this member leads, every interval it hashes its
// key-value history at its revision, asks every other member for the hash at that revision (on
// their peer URLs, as the initial check does), waits until it has applied everything committed,
// hashes again, and judges by etcd's rules (FindCorruptMember). A member found corrupt gets the
// CORRUPT alarm through the log, after which every member refuses changes to keys and leases with
// "etcdserver: corrupt cluster" (reads are still served) until `etcdctl alarm disarm`.
#pragma once

#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/corruption/initial_corrupt_check.h"
#include "server/tls/tls_files.h"

namespace leasehold::server {

class Member;

// The leader's own hash of its history: at `revision`, compacted at `compact_revision`.
struct LocalHash {
  uint32_t hash = 0;
  int64_t revision = 0;
  int64_t compact_revision = 0;
};

// etcd's verdict, each finding logged in its words: the leader itself when its hash changed while
// its revision and compaction did not (`before` against `after`); a peer whose revision or compact
// revision is past the leader's (`after`), or whose hash differs at the leader's first compact
// revision. Only the first finding is returned (one alarm per check, as etcd raises).
std::optional<uint64_t> FindCorruptMember(uint64_t self_id, const LocalHash& before,
                                          const LocalHash& after,
                                          const std::vector<PeerHash>& peers);

// The thread that runs the check (none when `interval` is zero).
class CorruptionMonitor {
 public:
  // `timeout` bounds each peer's answer and the wait for the applied state.
  CorruptionMonitor(Member* member, TlsFiles peer_tls, absl::Duration interval,
                    absl::Duration timeout);
  ~CorruptionMonitor() { Stop(); }
  void Start();
  void Stop();

 private:
  void Run();
  void CheckOnce();
  // Blocks until this member has applied everything committed when called (false on a timeout,
  // a lost leader or a stop).
  bool AwaitAppliedState();

  Member* const member_;
  const TlsFiles peer_tls_;
  const absl::Duration interval_;
  const absl::Duration timeout_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace leasehold::server
