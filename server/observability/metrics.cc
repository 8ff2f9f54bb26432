#include "server/observability/metrics.h"

#include <mutex>
#include <tuple>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "absl/strings/str_cat.h"
#include "server/observability/process_stats.h"

namespace leasehold::server {
namespace {

prometheus::Gauge* NewGauge(prometheus::Registry& registry, const std::string& name,
                            const std::string& help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

prometheus::Counter* NewCounter(prometheus::Registry& registry, const std::string& name,
                                const std::string& help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

// A histogram with `count` buckets from `start`, each twice the last (Prometheus'
// ExponentialBuckets, as etcd builds them).
prometheus::Histogram* NewHistogram(prometheus::Registry& registry, const std::string& name,
                                    const std::string& help, double start, int count) {
  prometheus::Histogram::BucketBoundaries buckets;
  for (double bound = start; static_cast<int>(buckets.size()) < count; bound *= 2)
    buckets.push_back(bound);
  return &prometheus::BuildHistogram().Name(name).Help(help).Register(registry).Add({}, buckets);
}

}  // namespace

void Metrics::TwinCounter::Increment() const {
  main->Increment();
  debugging->Increment();
}

void Metrics::SetServerVersion(const std::string& version) {
  server_version_->Add({{"server_version", version}}).Set(1);
}

prometheus::Family<prometheus::Histogram>& Metrics::GrpcHandlingSeconds() {
  std::call_once(grpc_handling_once_, [this] {
    grpc_handling_ =
        &prometheus::BuildHistogram()
             .Name("grpc_server_handling_seconds")
             .Help(
                 "Histogram of response latency (seconds) of gRPC that had been application-level "
                 "handled by the server.")
             .Register(*registry_);
  });
  return *grpc_handling_;
}

Metrics& Metrics::Get() {
  static Metrics* metrics = new Metrics();
  return *metrics;
}

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  server_version_ =
      &prometheus::BuildGauge()
           .Name("etcd_server_version")
           .Help("Which version is running. 1 for 'server_version' label with current version.")
           .Register(r);
  auto counters = [&r](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(r);
  };
  grpc_started_ =
      counters("grpc_server_started_total", "Total number of RPCs started on the server.");
  grpc_handled_ =
      counters("grpc_server_handled_total",
               "Total number of RPCs completed on the server, regardless of success or failure.");
  grpc_received_ = counters("grpc_server_msg_received_total",
                            "Total number of RPC stream messages received on the server.");
  grpc_sent_ = counters("grpc_server_msg_sent_total",
                        "Total number of gRPC stream messages sent by the server.");
  has_leader_ = NewGauge(r, "etcd_server_has_leader",
                         "Whether or not a leader exists. 1 is existence, 0 is not.");
  is_leader_ = NewGauge(r, "etcd_server_is_leader",
                        "Whether or not this member is a leader. 1 if is, 0 otherwise.");
  leader_changes_ =
      NewCounter(r, "etcd_server_leader_changes_seen_total", "The number of leader changes seen.");
  slow_read_indexes_ =
      NewCounter(r, "etcd_server_slow_read_indexes_total",
                 "Read index requests asked again after going unanswered for 500 ms.");
  proposals_committed_ = NewGauge(r, "etcd_server_proposals_committed_total",
                                  "The total number of consensus proposals committed.");
  proposals_applied_ = NewGauge(r, "etcd_server_proposals_applied_total",
                                "The total number of consensus proposals applied.");
  db_size_ = NewGauge(r, "etcd_mvcc_db_total_size_in_bytes",
                      "Total size of the underlying database physically allocated in bytes.");
  revision_ = NewGauge(r, "etcd_debugging_mvcc_current_revision", "The current revision of store.");
  leases_ = NewGauge(r, "leasehold_leases",
                     "Leases in the LeaseCollection (blob leases' timers included).");
  expired_revokes_ = NewCounter(r, "etcd_debugging_server_lease_expired_total",
                                "Expired leases whose revocation this member proposed as leader.");
  blobs_ = NewGauge(r, "leasehold_blob_blobs", "Blobs stored by the Azure Blob adapter.");
  process_cpu_ = NewCounter(r, "process_cpu_seconds_total",
                            "Total user and system CPU time spent in seconds.");
  process_resident_ =
      NewGauge(r, "process_resident_memory_bytes", "Resident memory size in bytes.");
  process_virtual_ = NewGauge(r, "process_virtual_memory_bytes", "Virtual memory size in bytes.");
  process_start_ = NewGauge(r, "process_start_time_seconds",
                            "Start time of the process since unix epoch in seconds.");
  process_open_fds_ = NewGauge(r, "process_open_fds", "Number of open file descriptors.");
  process_max_fds_ = NewGauge(r, "process_max_fds", "Maximum number of open file descriptors.");
  // etcd's buckets for this histogram: 14 of them from 1 ms, doubling (to 8.192 s).
  prometheus::Histogram::BucketBoundaries buckets;
  for (double bound = 0.001; buckets.size() < 14; bound *= 2) buckets.push_back(bound);
  wal_fsync_ =
      &prometheus::BuildHistogram()
           .Name("etcd_disk_wal_fsync_duration_seconds")
           .Help("The latency distributions of fsync called by the Raft log (whole synced write).")
           .Register(r)
           .Add({}, buckets);
  backend_commit_ =
      &prometheus::BuildHistogram()
           .Name("etcd_disk_backend_commit_duration_seconds")
           .Help(
               "The latency distributions of commit called by backend (an applied group's write).")
           .Register(r)
           .Add({}, buckets);
  proposals_failed_ = NewCounter(r, "etcd_server_proposals_failed_total",
                                 "The total number of failed proposals seen.");
  proposals_pending_ = NewGauge(r, "etcd_server_proposals_pending",
                                "The current number of pending proposals to commit.");
  db_size_in_use_ = NewGauge(r, "etcd_mvcc_db_total_size_in_use_in_bytes",
                             "Total size of the underlying database logically in use in bytes.");
  quota_backend_bytes_ = NewGauge(r, "etcd_server_quota_backend_bytes",
                                  "Current backend storage quota size in bytes.");
  peer_sent_failures_ = &prometheus::BuildCounter()
                             .Name("etcd_network_peer_sent_failures_total")
                             .Help("The total number of send failures from peers.")
                             .Register(r);
  blob_answers_ = &prometheus::BuildCounter()
                       .Name("leasehold_blob_requests_total")
                       .Help("Azure Blob adapter answers by HTTP status.")
                       .Register(r);
  AddEtcdServerMetrics();
  AddEtcdStorageMetrics();
}

void Metrics::AddEtcdServerMetrics() {
  auto& r = *registry_;
  read_indexes_failed_ = NewCounter(r, "etcd_server_read_indexes_failed_total",
                                    "Linearizable reads whose read index could not be had.");
  slow_applies_ = NewCounter(r, "etcd_server_slow_apply_total",
                             "Entries whose apply took longer than the warning apply duration.");
  heartbeat_send_failures_ =
      NewCounter(r, "etcd_server_heartbeat_send_failures_total",
                 "Heartbeats the leader could not send to a follower (a slow or gone peer).");
  health_successes_ =
      NewCounter(r, "etcd_server_health_success", "Health checks (/health) answered healthy.");
  health_failures_ =
      NewCounter(r, "etcd_server_health_failures", "Health checks (/health) answered unhealthy.");
  learner_promotions_ = NewCounter(r, "etcd_server_learner_promote_successes",
                                   "Learners this member promoted to voters.");
  snapshot_applying_ = NewGauge(r, "etcd_server_snapshot_apply_in_progress_total",
                                "1 while this member installs a snapshot from its leader.");
  client_requests_ = &prometheus::BuildCounter()
                          .Name("etcd_server_client_requests_total")
                          .Help("Client gRPC calls by type and the client's API version.")
                          .Register(r);
  peer_sent_bytes_ = &prometheus::BuildCounter()
                          .Name("etcd_network_peer_sent_bytes_total")
                          .Help("Bytes of Raft messages sent to each peer.")
                          .Register(r);
  peer_received_bytes_ = &prometheus::BuildCounter()
                              .Name("etcd_network_peer_received_bytes_total")
                              .Help("Bytes of Raft messages received from each peer.")
                              .Register(r);
  active_peers_ = &prometheus::BuildGauge()
                       .Name("etcd_network_active_peers")
                       .Help("1 for each peer this member's messages reach.")
                       .Register(r);
  peer_round_trip_ = &prometheus::BuildHistogram()
                          .Name("etcd_network_peer_round_trip_time_seconds")
                          .Help("From a leader's heartbeat to a peer until its answer.")
                          .Register(r);
  client_received_bytes_ = NewCounter(r, "etcd_network_client_grpc_received_bytes_total",
                                      "Bytes of gRPC messages received from clients.");
  client_sent_bytes_ = NewCounter(r, "etcd_network_client_grpc_sent_bytes_total",
                                  "Bytes of gRPC messages sent to clients.");
  server_id_ = &prometheus::BuildGauge()
                    .Name("etcd_server_id")
                    .Help("1, labelled with this member's id.")
                    .Register(r);
  cluster_version_ = &prometheus::BuildGauge()
                          .Name("etcd_cluster_version")
                          .Help("1, labelled with the cluster's version (major.minor).")
                          .Register(r);
  is_learner_ = NewGauge(r, "etcd_server_is_learner", "1 if this member is a learner, else 0.");
  os_fd_used_ = NewGauge(r, "os_fd_used", "File descriptors this process has open.");
  os_fd_limit_ = NewGauge(r, "os_fd_limit", "File descriptors this process may open.");
  process_virtual_max_ = NewGauge(r, "process_virtual_memory_max_bytes",
                                  "The most virtual memory this process may have, in bytes.");
  // A gauge that only grows, as etcd declares it.
  wal_write_bytes_ = NewGauge(r, "etcd_disk_wal_write_bytes_total",
                              "Bytes written to the Raft log (entries and hard state).");
  defrag_inflight_ = NewGauge(r, "etcd_disk_defrag_inflight", "1 while a defragment runs.");
  defrag_ = NewHistogram(r, "etcd_disk_backend_defrag_duration_seconds",
                         "How long each defragment took.", 0.1, 13);
  backend_snapshot_ = NewHistogram(r, "etcd_disk_backend_snapshot_duration_seconds",
                                   "How long each snapshot sent to a client took.", 0.01, 17);
  snapshot_save_total_ = NewHistogram(r, "etcd_debugging_snap_save_total_duration_seconds",
                                      "How long making each Raft snapshot took.", 0.001, 14);
  snapshot_save_marshalling_ =
      NewHistogram(r, "etcd_debugging_snap_save_marshalling_duration_seconds",
                   "How long encoding each Raft snapshot took.", 0.001, 14);
  snapshot_db_fsync_ = NewHistogram(r, "etcd_snap_db_fsync_duration_seconds",
                                    "How long syncing a received snapshot's data took.", 0.001, 14);
  snapshot_db_save_total_ =
      NewHistogram(r, "etcd_snap_db_save_total_duration_seconds",
                   "How long receiving and saving a leader's snapshot took.", 0.1, 10);
}

void Metrics::AddEtcdStorageMetrics() {
  auto& r = *registry_;
  auto twin = [&r](const std::string& op, const std::string& help) {
    return TwinCounter{NewCounter(r, "etcd_mvcc_" + op + "_total", help),
                       NewCounter(r, "etcd_debugging_mvcc_" + op + "_total", help)};
  };
  puts_ = twin("put", "Puts applied by this member.");
  deletes_ = twin("delete", "Delete-ranges applied by this member.");
  ranges_ = twin("range", "Ranges read on this member.");
  txns_ = twin("txn", "Requests that ran more than one operation.");
  put_bytes_ = NewGauge(r, "etcd_debugging_mvcc_total_put_size_in_bytes",
                        "Bytes of the keys and values of the puts applied by this member.");
  compaction_keys_ = NewCounter(r, "etcd_debugging_mvcc_db_compaction_keys_total",
                                "Old versions deleted by compactions.");
  compaction_total_ms_ =
      NewHistogram(r, "etcd_debugging_mvcc_db_compaction_total_duration_milliseconds",
                   "How long each compaction took, in milliseconds.", 100, 14);
  compaction_pause_ms_ =
      NewHistogram(r, "etcd_debugging_mvcc_db_compaction_pause_duration_milliseconds",
                   "How long each compaction held up applies, in milliseconds.", 1, 13);
  index_compaction_pause_ms_ = NewHistogram(
      r, "etcd_debugging_mvcc_index_compaction_pause_duration_milliseconds",
      "How long each compaction of the key index held up applies, in milliseconds.", 0.5, 14);
  hash_ = NewHistogram(r, "etcd_mvcc_hash_duration_seconds",
                       "How long each hash of the whole store took.", 0.01, 15);
  hash_kv_ = NewHistogram(r, "etcd_mvcc_hash_rev_duration_seconds",
                          "How long each hash of the keys up to a revision took.", 0.01, 15);
  watch_events_ = NewCounter(r, "etcd_debugging_mvcc_events_total",
                             "Watch events sent by this member, one per watcher sent it.");
  watchers_ = NewGauge(r, "etcd_debugging_mvcc_watcher_total", "Watchers on this member.");
  watch_streams_ =
      NewGauge(r, "etcd_debugging_mvcc_watch_stream_total", "Watch streams on this member.");
  slow_watchers_ = NewGauge(r, "etcd_debugging_mvcc_slow_watcher_total",
                            "Watchers behind, to be caught up from history.");
  pending_events_ = NewGauge(r, "etcd_debugging_mvcc_pending_events_total",
                             "Revisions slow watchers have yet to be sent.");
  auth_revision_ = NewGauge(r, "etcd_debugging_auth_revision", "The auth state's revision.");
  compact_revision_ =
      NewGauge(r, "etcd_debugging_mvcc_compact_revision", "The revision of the last compaction.");
  keys_total_ = NewGauge(r, "etcd_debugging_mvcc_keys_total", "Live keys in the store.");
  debugging_db_size_ = NewGauge(r, "etcd_debugging_mvcc_db_total_size_in_bytes",
                                "Bytes the store's files take on disk.");
  open_read_transactions_ = NewGauge(r, "etcd_mvcc_db_open_read_transactions",
                                     "Consistent read views of the store held open.");
  leases_granted_ = NewCounter(r, "etcd_debugging_lease_granted_total", "Leases granted.");
  leases_revoked_ = NewCounter(r, "etcd_debugging_lease_revoked_total", "Leases revoked.");
  leases_renewed_ =
      NewCounter(r, "etcd_debugging_lease_renewed_total", "Lease renewals served as the leader.");
  lease_ttl_ = NewHistogram(r, "etcd_debugging_lease_ttl_total",
                            "The TTLs of the leases granted, in seconds.", 1, 24);
}

void Metrics::CountLeaderChange() { leader_changes_->Increment(); }
void Metrics::CountReadIndexFailed() { read_indexes_failed_->Increment(); }
void Metrics::CountSlowApply() { slow_applies_->Increment(); }
void Metrics::CountHeartbeatSendFailure() { heartbeat_send_failures_->Increment(); }
void Metrics::CountHealthCheck(bool healthy) {
  (healthy ? health_successes_ : health_failures_)->Increment();
}
void Metrics::CountLearnerPromoted() { learner_promotions_->Increment(); }
void Metrics::SetSnapshotApplyInProgress(bool on) { snapshot_applying_->Set(on ? 1 : 0); }

void Metrics::CountClientRequest(bool stream, const std::string& client_api_version) {
  // Family::Add locks; each thread keeps the few counters it has used.
  thread_local std::vector<std::tuple<bool, std::string, prometheus::Counter*>> used;
  for (const auto& [s, version, counter] : used) {
    if (s == stream && version == client_api_version) return counter->Increment();
  }
  prometheus::Counter* counter = &client_requests_->Add(
      {{"type", stream ? "stream" : "unary"}, {"client_api_version", client_api_version}});
  if (used.size() < 16) used.emplace_back(stream, client_api_version, counter);
  counter->Increment();
}

void Metrics::CountClientBytes(uint64_t received, uint64_t sent) {
  if (received > 0) client_received_bytes_->Increment(static_cast<double>(received));
  if (sent > 0) client_sent_bytes_->Increment(static_cast<double>(sent));
}

void Metrics::CountPut(size_t bytes) {
  puts_.Increment();
  put_bytes_->Increment(static_cast<double>(bytes));
}
void Metrics::CountDeleteRange() { deletes_.Increment(); }
void Metrics::CountRange() { ranges_.Increment(); }
void Metrics::CountTxn() { txns_.Increment(); }

void Metrics::ObserveCompaction(uint64_t versions_deleted, double milliseconds) {
  compaction_keys_->Increment(static_cast<double>(versions_deleted));
  compaction_total_ms_->Observe(milliseconds);
  compaction_pause_ms_->Observe(milliseconds);
  index_compaction_pause_ms_->Observe(milliseconds);
}

void Metrics::CountLeaseGranted(int64_t ttl_seconds) {
  leases_granted_->Increment();
  lease_ttl_->Observe(static_cast<double>(ttl_seconds));
}
void Metrics::CountLeaseRevoked() { leases_revoked_->Increment(); }
void Metrics::CountLeaseRenewed() { leases_renewed_->Increment(); }

void Metrics::CountWalWriteBytes(uint64_t bytes) {
  wal_write_bytes_->Increment(static_cast<double>(bytes));
}
void Metrics::SetDefragInflight(bool on) { defrag_inflight_->Set(on ? 1 : 0); }
void Metrics::ObserveDefrag(double seconds) { defrag_->Observe(seconds); }
void Metrics::ObserveBackendSnapshot(double seconds) { backend_snapshot_->Observe(seconds); }
void Metrics::ObserveHash(double seconds) { hash_->Observe(seconds); }
void Metrics::ObserveHashKv(double seconds) { hash_kv_->Observe(seconds); }
void Metrics::ObserveSnapshotSave(double marshalling_seconds, double total_seconds) {
  snapshot_save_marshalling_->Observe(marshalling_seconds);
  snapshot_save_total_->Observe(total_seconds);
}
void Metrics::ObserveSnapshotReceive(double fsync_seconds, double total_seconds) {
  snapshot_db_fsync_->Observe(fsync_seconds);
  snapshot_db_save_total_->Observe(total_seconds);
}
void Metrics::CountSlowReadIndex() { slow_read_indexes_->Increment(); }

void Metrics::CountExpiredRevokes(uint64_t count) {
  expired_revokes_->Increment(static_cast<double>(count));
}

void Metrics::ObserveWalFsync(double seconds) { wal_fsync_->Observe(seconds); }
void Metrics::ObserveBackendCommit(double seconds) { backend_commit_->Observe(seconds); }
void Metrics::CountProposalFailed() { proposals_failed_->Increment(); }

void Metrics::CountPeerSendFailures(const std::string& to, uint64_t count) {
  // Family::Add returns the same counter for the same labels; members are few.
  if (count > 0) peer_sent_failures_->Add({{"To", to}}).Increment(static_cast<double>(count));
}

void Metrics::CountPeerSentBytes(const std::string& to, uint64_t bytes) {
  peer_sent_bytes_->Add({{"To", to}}).Increment(static_cast<double>(bytes));
}

void Metrics::CountPeerReceivedBytes(const std::string& from, uint64_t bytes) {
  peer_received_bytes_->Add({{"From", from}}).Increment(static_cast<double>(bytes));
}

void Metrics::SetPeerActive(const std::string& local, const std::string& remote, bool active) {
  active_peers_->Add({{"Local", local}, {"Remote", remote}}).Set(active ? 1 : 0);
}

void Metrics::ObservePeerRoundTrip(const std::string& to, double seconds) {
  prometheus::Histogram::BucketBoundaries buckets;
  for (double bound = 0.0001; buckets.size() < 14; bound *= 2) buckets.push_back(bound);
  peer_round_trip_->Add({{"To", to}}, buckets).Observe(seconds);
}

void Metrics::CountBlobAnswer(int status) {
  if (status < 100 || status >= 600) return;
  std::atomic<prometheus::Counter*>& slot = blob_answer_by_status_[status - 100];
  prometheus::Counter* counter = slot.load(std::memory_order_acquire);
  if (counter == nullptr) {
    // Family::Add returns the same counter for the same labels, so a race here is harmless.
    counter = &blob_answers_->Add({{"code", std::to_string(status)}});
    slot.store(counter, std::memory_order_release);
  }
  counter->Increment();
}

std::string Metrics::Render(const MemberStats& member) {
  has_leader_->Set(member.has_leader ? 1 : 0);
  is_leader_->Set(member.is_leader ? 1 : 0);
  proposals_committed_->Set(static_cast<double>(member.committed_index));
  proposals_applied_->Set(static_cast<double>(member.applied_index));
  proposals_pending_->Set(static_cast<double>(member.pending_proposals));
  quota_backend_bytes_->Set(static_cast<double>(member.quota_backend_bytes));
  db_size_->Set(static_cast<double>(member.db_size_bytes));
  db_size_in_use_->Set(static_cast<double>(member.db_size_in_use_bytes));
  revision_->Set(static_cast<double>(member.revision));
  leases_->Set(static_cast<double>(member.leases));
  blobs_->Set(static_cast<double>(member.blobs));
  server_id_->Add({{"server_id", absl::StrCat(absl::Hex(member.member_id))}}).Set(1);
  {
    static std::mutex version_mu;
    std::lock_guard<std::mutex> lock(version_mu);
    if (member.cluster_version != shown_cluster_version_) {
      if (!shown_cluster_version_.empty())
        cluster_version_->Remove(
            &cluster_version_->Add({{"cluster_version", shown_cluster_version_}}));
      shown_cluster_version_ = member.cluster_version;
      if (!shown_cluster_version_.empty())
        cluster_version_->Add({{"cluster_version", shown_cluster_version_}}).Set(1);
    }
  }
  is_learner_->Set(member.is_learner ? 1 : 0);
  auth_revision_->Set(static_cast<double>(member.auth_revision));
  compact_revision_->Set(static_cast<double>(member.compact_revision));
  keys_total_->Set(static_cast<double>(member.live_keys));
  debugging_db_size_->Set(static_cast<double>(member.db_size_bytes));
  open_read_transactions_->Set(static_cast<double>(member.open_read_views));
  watchers_->Set(static_cast<double>(member.watchers));
  watch_streams_->Set(static_cast<double>(member.watch_streams));
  slow_watchers_->Set(static_cast<double>(member.slow_watchers));
  pending_events_->Set(static_cast<double>(member.pending_watch_revisions));
  {
    // A counter only goes up: raise it to the hub's total (one scrape at a time).
    static std::mutex events_mu;
    std::lock_guard<std::mutex> lock(events_mu);
    const double unseen = static_cast<double>(member.watch_events_sent) - watch_events_->Value();
    if (unseen > 0) watch_events_->Increment(unseen);
  }
  if (auto process = ReadProcessStats(); process.ok()) {
    // A counter only goes up: add what was spent since the last scrape (one scrape at a time).
    static std::mutex cpu_mu;
    {
      std::lock_guard<std::mutex> lock(cpu_mu);
      const double spent = process->cpu_seconds - process_cpu_->Value();
      if (spent > 0) process_cpu_->Increment(spent);
    }
    process_resident_->Set(process->resident_bytes);
    process_virtual_->Set(process->virtual_bytes);
    process_start_->Set(process->start_time_seconds);
    process_open_fds_->Set(process->open_fds);
    process_max_fds_->Set(process->max_fds);
    os_fd_used_->Set(process->open_fds);
    os_fd_limit_->Set(process->max_fds);
    process_virtual_max_->Set(process->virtual_max_bytes);
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace leasehold::server
