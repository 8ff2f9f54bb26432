#include "server/observability/metrics.h"

#include <mutex>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

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

}  // namespace

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
  expired_revokes_ = NewCounter(r, "leasehold_lease_expired_revokes_total",
                                "Revocations of expired leases proposed by this member.");
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
}

void Metrics::CountLeaderChange() { leader_changes_->Increment(); }
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
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace leasehold::server
