// The state machine's reports of its work (storage/apply/apply_observer.h) counted in etcd's
// metrics (observability/metrics.h). One per process; stateless but for a compaction's start.
#pragma once

#include <chrono>

#include "storage/apply/apply_observer.h"

namespace leasehold::server {

class MetricsApplyObserver final : public storage::ApplyObserver {
 public:
  void Put(size_t key_and_value_bytes) override;
  void DeleteRange() override;
  void Range() override;
  void Txn() override;
  void LeaseGranted(int64_t ttl_seconds) override;
  void LeaseRevoked() override;
  void CompactionStarted() override;
  void CompactionFinished(uint64_t versions_deleted) override;

 private:
  std::chrono::steady_clock::time_point compaction_started_;  // the apply thread's alone
};

}  // namespace leasehold::server
