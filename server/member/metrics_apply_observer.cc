#include "server/member/metrics_apply_observer.h"

#include "server/observability/metrics.h"

namespace leasehold::server {

void MetricsApplyObserver::Put(size_t key_and_value_bytes) {
  Metrics::Get().CountPut(key_and_value_bytes);
}
void MetricsApplyObserver::DeleteRange() { Metrics::Get().CountDeleteRange(); }
void MetricsApplyObserver::Range() { Metrics::Get().CountRange(); }
void MetricsApplyObserver::Txn() { Metrics::Get().CountTxn(); }
void MetricsApplyObserver::LeaseGranted(int64_t ttl_seconds) {
  Metrics::Get().CountLeaseGranted(ttl_seconds);
}
void MetricsApplyObserver::LeaseRevoked() { Metrics::Get().CountLeaseRevoked(); }

void MetricsApplyObserver::CompactionStarted() {
  compaction_started_ = std::chrono::steady_clock::now();
}

void MetricsApplyObserver::CompactionFinished(uint64_t versions_deleted) {
  const std::chrono::duration<double, std::milli> took =
      std::chrono::steady_clock::now() - compaction_started_;
  Metrics::Get().ObserveCompaction(versions_deleted, took.count());
}

}  // namespace leasehold::server
