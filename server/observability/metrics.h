// Process-wide metrics on prometheus-cpp (Debian's prometheus-cpp-dev, core library only), rendered
// in the Prometheus text format on /metrics of --listen-metrics-urls and of plain client URLs, next
// to etcd's /health. Counters and histograms are updated where events happen; gauges are read from
// the member at scrape time. Names follow etcd's where etcd has the metric; ours start with
// leasehold_. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace leasehold::server {

// The member's state that /metrics shows as gauges, read at each scrape (member/member_stats.h).
struct MemberStats {
  bool has_leader = false;
  bool is_leader = false;
  uint64_t committed_index = 0;
  uint64_t applied_index = 0;
  int64_t pending_proposals = 0;
  int64_t quota_backend_bytes = 0;
  int64_t db_size_bytes = 0;
  int64_t db_size_in_use_bytes = 0;
  int64_t revision = 0;
  size_t leases = 0;
  size_t blobs = 0;
};

class Metrics {
 public:
  static Metrics& Get();

  void CountLeaderChange();                   // etcd_server_leader_changes_seen_total
  void CountSlowReadIndex();                  // etcd_server_slow_read_indexes_total (etcd 3.5's)
  void CountExpiredRevokes(uint64_t count);   // leasehold_lease_expired_revokes_total
  void ObserveWalFsync(double seconds);       // etcd_disk_wal_fsync_duration_seconds
  void ObserveBackendCommit(double seconds);  // etcd_disk_backend_commit_duration_seconds
  void CountProposalFailed();                 // etcd_server_proposals_failed_total
  // etcd_network_peer_sent_failures_total{To}: `count` messages to member `to` (hex id) not sent.
  void CountPeerSendFailures(const std::string& to, uint64_t count);
  void CountBlobAnswer(int status);                   // leasehold_blob_requests_total{code}
  void SetServerVersion(const std::string& version);  // etcd_server_version{server_version} 1
  // grpc_server_started_total, _handled_total, _msg_received_total, _msg_sent_total (grpc_metrics.h
  // fills them per method).
  prometheus::Family<prometheus::Counter>& GrpcStarted() { return *grpc_started_; }
  prometheus::Family<prometheus::Counter>& GrpcHandled() { return *grpc_handled_; }
  prometheus::Family<prometheus::Counter>& GrpcReceived() { return *grpc_received_; }
  prometheus::Family<prometheus::Counter>& GrpcSent() { return *grpc_sent_; }
  // grpc_server_handling_seconds (etcd's --metrics extensive): registered on first use.
  prometheus::Family<prometheus::Histogram>& GrpcHandlingSeconds();

  // The whole exposition, with the member's gauges as `member` says and the process's read now.
  std::string Render(const MemberStats& member);

 private:
  Metrics();

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* leader_changes_;
  prometheus::Counter* slow_read_indexes_;
  prometheus::Counter* expired_revokes_;
  prometheus::Histogram* wal_fsync_;
  prometheus::Histogram* backend_commit_;
  prometheus::Counter* proposals_failed_;
  prometheus::Gauge* proposals_pending_;
  prometheus::Gauge* quota_backend_bytes_;
  prometheus::Gauge* db_size_in_use_;
  prometheus::Family<prometheus::Counter>* peer_sent_failures_;
  prometheus::Family<prometheus::Counter>* blob_answers_;
  prometheus::Family<prometheus::Gauge>* server_version_;
  prometheus::Family<prometheus::Counter>* grpc_started_;
  prometheus::Family<prometheus::Counter>* grpc_handled_;
  prometheus::Family<prometheus::Counter>* grpc_received_;
  prometheus::Family<prometheus::Counter>* grpc_sent_;
  std::once_flag grpc_handling_once_;
  prometheus::Family<prometheus::Histogram>* grpc_handling_ = nullptr;
  // One counter per HTTP status, made on first use (Family::Add takes a lock; the hot path should
  // not).
  std::array<std::atomic<prometheus::Counter*>, 500> blob_answer_by_status_{};
  prometheus::Gauge* has_leader_;
  prometheus::Gauge* is_leader_;
  prometheus::Gauge* proposals_committed_;
  prometheus::Gauge* proposals_applied_;
  prometheus::Gauge* db_size_;
  prometheus::Gauge* revision_;
  prometheus::Gauge* leases_;
  prometheus::Gauge* blobs_;
  // Prometheus' standard process_* metrics (see process_stats.h).
  prometheus::Counter* process_cpu_;
  prometheus::Gauge* process_resident_;
  prometheus::Gauge* process_virtual_;
  prometheus::Gauge* process_start_;
  prometheus::Gauge* process_open_fds_;
  prometheus::Gauge* process_max_fds_;
};

}  // namespace leasehold::server
