// The campaign's clients: concurrent workers against a cluster's members over etcd's gRPC API, each
// recording what it sent, when, and what came back (or that nothing did: an unknown outcome).
//  - registers: read / write / compare-and-set on a few keys (checked for linearizability);
//  - set: unique keys put once (checked: no acknowledged write lost);
//  - leases: grant, attach a key, renew for a while, then revoke or abandon; an observer reads
//    which keys exist (checked for lease safety and liveness);
//  - fenced lock: etcd's Lock, then writes to a register that refuses lower fencing tokens, with
//    holders that stall past their lease's TTL (checked: stale tokens refused, no overlap);
//  - watches: watchers from the first revision, asking for progress notifications and resuming on
//    another member when theirs fails: of every key with prev_kv, but the second only of lease
//    keys' deletions and the third only of set keys' puts without prev_kv (checked against the
//    history read at the end: in order, no gap, no duplicate, progress never ahead of events).
// Thread-safe: workers run on their own threads and share the Recorder.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/faults/history.h"
#include "tests/faults/linearizability.h"

namespace leasehold::faults {

// Nanoseconds on the steady clock since the campaign began.
class CampaignClock {
 public:
  int64_t Now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct Recorder {
  std::mutex mu;
  std::vector<RegisterOp> registers;
  std::vector<std::pair<std::string, int64_t>> set_acked;  // key, acknowledged at
  std::vector<LeaseLife> leases;
  std::vector<LeaseObservation> lease_observations;
  std::vector<FencedWrite> fenced;
  std::vector<WatchLog> watches;
  std::vector<LatencySample> samples;
  std::vector<FaultWindow> faults;
  std::vector<std::string> anomalies;  // found while running (acknowledged writes after a fault)
  int64_t set_checks = 0;
};

struct WorkloadOptions {
  int register_keys = 5;
  int register_workers = 5;
  double register_rate = 10;  // operations per second per worker
  int set_workers = 1;
  int lease_workers = 4;
  int lock_workers = 4;
  int watch_workers = 2;
  int64_t lease_ttl_s = 3;
  uint64_t seed = 1;
  // Register reads served from the member's own state (etcd's serializable reads), which may be
  // stale: not linearizable, so a campaign with it shows the checker catching real anomalies.
  bool serializable_reads = false;
  // Negative controls for the watch checker: the first watcher corrupts what it records, once, past
  // its tenth event, so a campaign with one shows the checker finding it.
  enum class WatchFault {
    kNone,
    kDrop,      // loses the event
    kReorder,   // swaps it with the next event of a later revision
    kProgress,  // records a progress notification five revisions ahead of it
  };
  WatchFault break_watch = WatchFault::kNone;
};

class Members;  // per-member gRPC stubs (workloads.cc)

class Workloads {
 public:
  Workloads(std::vector<std::string> endpoints, WorkloadOptions options, const CampaignClock* clock,
            Recorder* recorder);
  ~Workloads();

  void Start();
  void Stop();  // joins the workers

  // Reads every set/ key through a member that answers (linearizably) and records, as anomalies,
  // acknowledged writes missing from it. `label` says when (which fault it follows).
  void VerifyAcknowledged(const std::string& label);
  // Reads each register's final value (recorded as ordinary reads), and the fenced register's log.
  std::vector<AcceptedWrite> ReadFencedLog();
  void FinalRegisterReads();
  // Every event from the first revision to the current one, read through a watch on a member that
  // answers, and every key's value at that revision in `final_state` (both empty, with an anomaly
  // recorded, when no member answers).
  std::vector<WatchedEvent> ReadWatchHistory(std::map<std::string, std::string>* final_state);
  // Index of the member leading, or -1 when none of the given ones answers with a leader.
  int Leader(const std::vector<int>& candidates);
  // The highest Raft index among `members` that answer; -1 when none does.
  int64_t RaftIndex(const std::vector<int>& members);

 private:
  void RegisterWorker(int worker);
  void SetWorker(int worker);
  void LeaseWorker(int worker);
  void LeaseObserver();
  void LockWorker(int worker);
  void WatchWorker(int worker);
  void Sample(int64_t at, int64_t latency, const char* kind, bool ok);

  std::unique_ptr<Members> members_;
  WorkloadOptions options_;
  const CampaignClock* clock_;
  Recorder* recorder_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> next_value_{1};
  std::atomic<int64_t> next_set_key_{0};
  std::vector<std::thread> threads_;
};

}  // namespace leasehold::faults
