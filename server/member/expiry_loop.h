// The primary's lease timekeeper. It pops leases whose time is up and proposes their revocation,
// many to a log entry (a LeaseExpiry: each lease still revoked in a revision of its own). It paces
// by the cost of the work rather than by a count: one such entry is in flight at a time, of at most
// `max_leases_per_entry` leases and `max_keys_per_entry` of their keys, and the next is proposed as
// soon as it has applied. So a storm drains as fast as the log commits and applies, while a
// client's write waits behind at most one bounded entry. `revoke_rate_per_second` (> 0) caps the
// rate below that, for an operator who wants expiry to trail (etcd's own fixed rate is 1000/s). A
// lease whose revoke does not take effect comes back after `retry_ms`. Every
// `checkpoint_interval_ms` it proposes one checkpoint entry with the remaining time of each lease
// renewed since the last one, so a restart keeps renewed deadlines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include "server/member/member.h"

namespace leasehold::server {

class ExpiryLoop {
 public:
  struct Options {
    int revoke_rate_per_second = 0;  // 0: no cap beyond the pacing
    size_t max_leases_per_entry = 200;
    size_t max_keys_per_entry = 400;
    int64_t retry_ms = 7000;
    int64_t checkpoint_interval_ms = 500;
    int64_t tick_ms = 10;
  };
  ExpiryLoop(Member* member, Options options);
  ~ExpiryLoop();

  void Start();
  void Stop();

 private:
  struct Pacing;  // shared with the entries' completions, which may outlive the loop

  void Run();
  // Proposes one entry of expired leases if none is in flight and the budget allows. Returns
  // whether it proposed one (then more may be due at once).
  bool RevokeExpired(int64_t now_ms, double* budget);
  void Checkpoint(int64_t now_ms);

  Member* const member_;
  const Options options_;
  const std::shared_ptr<Pacing> pacing_;
  std::thread thread_;
};

}  // namespace leasehold::server
