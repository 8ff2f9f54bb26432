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
  uint64_t member_id = 0;        // etcd_server_id{server_id="<hex>"}
  bool is_learner = false;       // etcd_server_is_learner
  std::string cluster_version;   // etcd_cluster_version{cluster_version="3.4"}
  uint64_t auth_revision = 0;    // etcd_debugging_auth_revision
  int64_t compact_revision = 0;  // etcd_debugging_mvcc_compact_revision
  size_t live_keys = 0;          // etcd_debugging_mvcc_keys_total
  int64_t open_read_views = 0;   // etcd_mvcc_db_open_read_transactions: pinned engine views
  // The watch hub's (etcd_debugging_mvcc_watcher_total, _watch_stream_total, _slow_watcher_total,
  // _pending_events_total; the last counts the revisions slow watchers have yet to be sent).
  size_t watchers = 0;
  size_t watch_streams = 0;
  size_t slow_watchers = 0;
  uint64_t pending_watch_revisions = 0;
  uint64_t watch_events_sent = 0;  // etcd_debugging_mvcc_events_total: a total since start
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

  void CountLeaderChange();                  // etcd_server_leader_changes_seen_total
  void CountSlowReadIndex();                 // etcd_server_slow_read_indexes_total (etcd 3.5's)
  void CountReadIndexFailed();               // etcd_server_read_indexes_failed_total
  void CountSlowApply();                     // etcd_server_slow_apply_total
  void CountHeartbeatSendFailure();          // etcd_server_heartbeat_send_failures_total
  void CountHealthCheck(bool healthy);       // etcd_server_health_success / _failures
  void CountLearnerPromoted();               // etcd_server_learner_promote_successes
  void SetSnapshotApplyInProgress(bool on);  // etcd_server_snapshot_apply_in_progress_total
  // etcd_server_client_requests_total{type="unary"|"stream", client_api_version}.
  void CountClientRequest(bool stream, const std::string& client_api_version);
  void CountClientBytes(uint64_t received,
                        uint64_t sent);  // etcd_network_client_grpc_*_bytes_total

  // The mvcc layer's operations, as etcd counts them (storage/apply/apply_observer.h):
  // etcd_mvcc_{put,delete,range,txn}_total and their etcd_debugging_mvcc_ twins, and
  // etcd_debugging_mvcc_total_put_size_in_bytes.
  void CountPut(size_t bytes);
  void CountDeleteRange();
  void CountRange();
  void CountTxn();
  // etcd_debugging_mvcc_db_compaction_keys_total, _db_compaction_total_duration_milliseconds,
  // _db_compaction_pause_duration_milliseconds and _index_compaction_pause_duration_milliseconds
  // (one pass here: the index and the versions go in the same apply).
  void ObserveCompaction(uint64_t versions_deleted, double milliseconds);

  // Leases: etcd_debugging_lease_granted_total with the TTL in etcd_debugging_lease_ttl_total,
  // _revoked_total, _renewed_total (by the leader), and etcd_debugging_server_lease_expired_total.
  void CountLeaseGranted(int64_t ttl_seconds);
  void CountLeaseRevoked();
  void CountLeaseRenewed();
  void CountExpiredRevokes(uint64_t count);

  // Disk: etcd_disk_wal_write_bytes_total, the defrag's duration and etcd_disk_defrag_inflight,
  // a snapshot's sending (etcd_disk_backend_snapshot_duration_seconds), the store hashes
  // (etcd_mvcc_hash_duration_seconds, _hash_rev_), the Raft snapshots this member makes
  // (etcd_debugging_snap_save_total_duration_seconds, _marshalling_) and receives
  // (etcd_snap_db_fsync_duration_seconds, etcd_snap_db_save_total_duration_seconds).
  void CountWalWriteBytes(uint64_t bytes);
  void SetDefragInflight(bool on);
  void ObserveDefrag(double seconds);
  void ObserveBackendSnapshot(double seconds);
  void ObserveHash(double seconds);
  void ObserveHashKv(double seconds);
  void ObserveSnapshotSave(double marshalling_seconds, double total_seconds);
  void ObserveSnapshotReceive(double fsync_seconds, double total_seconds);
  void ObserveWalFsync(double seconds);       // etcd_disk_wal_fsync_duration_seconds
  void ObserveBackendCommit(double seconds);  // etcd_disk_backend_commit_duration_seconds
  void CountProposalFailed();                 // etcd_server_proposals_failed_total
  // etcd_network_peer_sent_failures_total{To}: `count` messages to member `to` (hex id) not sent.
  void CountPeerSendFailures(const std::string& to, uint64_t count);
  // etcd_network_peer_sent_bytes_total{To}, etcd_network_peer_received_bytes_total{From},
  // etcd_network_active_peers{Local,Remote} (1 while the stream to the peer works) and
  // etcd_network_peer_round_trip_time_seconds{To} (measured by the leader, from a heartbeat to
  // its answer). Ids in hex.
  void CountPeerSentBytes(const std::string& to, uint64_t bytes);
  void CountPeerReceivedBytes(const std::string& from, uint64_t bytes);
  void SetPeerActive(const std::string& local, const std::string& remote, bool active);
  void ObservePeerRoundTrip(const std::string& to, double seconds);
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
  void AddEtcdServerMetrics();   // etcd_server_*, etcd_network_client_*, etcd_disk_*, os_*
  void AddEtcdStorageMetrics();  // etcd_mvcc_*, etcd_debugging_mvcc_*, etcd_debugging_lease_*

  // A counter etcd exports twice, under etcd_mvcc_ and etcd_debugging_mvcc_.
  struct TwinCounter {
    prometheus::Counter* main;
    prometheus::Counter* debugging;
    void Increment() const;
  };

  std::shared_ptr<prometheus::Registry> registry_;
  TwinCounter puts_, deletes_, ranges_, txns_;
  prometheus::Gauge* put_bytes_;
  prometheus::Counter *read_indexes_failed_, *slow_applies_, *heartbeat_send_failures_;
  prometheus::Counter *health_successes_, *health_failures_, *learner_promotions_;
  prometheus::Counter *client_received_bytes_, *client_sent_bytes_;
  prometheus::Family<prometheus::Counter>* client_requests_;
  prometheus::Counter *compaction_keys_, *watch_events_;
  prometheus::Counter *leases_granted_, *leases_revoked_, *leases_renewed_;
  prometheus::Gauge *wal_write_bytes_, *snapshot_applying_, *defrag_inflight_;
  prometheus::Histogram *lease_ttl_, *compaction_total_ms_, *compaction_pause_ms_,
      *index_compaction_pause_ms_;
  prometheus::Histogram *defrag_, *backend_snapshot_, *hash_, *hash_kv_;
  prometheus::Histogram *snapshot_save_total_, *snapshot_save_marshalling_;
  prometheus::Histogram *snapshot_db_fsync_, *snapshot_db_save_total_;
  // Read at scrape time (Render).
  prometheus::Family<prometheus::Gauge>*server_id_, *cluster_version_;
  std::string shown_cluster_version_;  // the label cluster_version_ has now
  prometheus::Gauge *is_learner_, *auth_revision_, *compact_revision_, *keys_total_;
  prometheus::Gauge *debugging_db_size_, *open_read_transactions_;
  prometheus::Gauge *watchers_, *watch_streams_, *slow_watchers_, *pending_events_;
  prometheus::Gauge *os_fd_used_, *os_fd_limit_, *process_virtual_max_;
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
  prometheus::Family<prometheus::Counter>*peer_sent_bytes_, *peer_received_bytes_;
  prometheus::Family<prometheus::Gauge>* active_peers_;
  prometheus::Family<prometheus::Histogram>* peer_round_trip_;
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
