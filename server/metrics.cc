#include "server/metrics.h"

#include "absl/strings/str_cat.h"
#include "server/member.h"

namespace leasehold::server {
namespace {

void Sample(std::string* out, const std::string& name, const std::string& help, const char* type, double value) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name, " ", value, "\n");
}

}  // namespace

Metrics& Metrics::Get() {
  static Metrics* metrics = new Metrics();
  return *metrics;
}

void Metrics::Histogram::Observe(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
}

void Metrics::Histogram::Render(const std::string& name, const std::string& help, std::string* out) const {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " histogram\n");
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    const std::string le = i < kBounds.size() ? absl::StrCat(kBounds[i]) : "+Inf";
    absl::StrAppend(out, name, "_bucket{le=\"", le, "\"} ", cumulative, "\n");
  }
  absl::StrAppend(out, name, "_sum ", static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9, "\n", name,
                  "_count ", cumulative, "\n");
}

void Metrics::CountBlobAnswer(int status) {
  if (status >= 100 && status < 600) blob_answers_[status - 100].fetch_add(1, std::memory_order_relaxed);
}

std::string Metrics::Render(Member& member) const {
  std::string out;
  Proposer& proposer = member.proposer();
  const uint64_t leader = proposer.leader_id();
  Sample(&out, "etcd_server_has_leader", "Whether or not a leader exists. 1 is existence, 0 is not.", "gauge",
         leader != 0 ? 1 : 0);
  Sample(&out, "etcd_server_is_leader", "Whether or not this member is a leader. 1 if is, 0 otherwise.", "gauge",
         member.IsLeader() ? 1 : 0);
  Sample(&out, "etcd_server_leader_changes_seen_total", "The number of leader changes seen.", "counter",
         static_cast<double>(leader_changes.load()));
  Sample(&out, "etcd_server_proposals_committed_total", "The total number of consensus proposals committed.", "gauge",
         static_cast<double>(proposer.committed_index()));
  Sample(&out, "etcd_server_proposals_applied_total", "The total number of consensus proposals applied.", "gauge",
         static_cast<double>(proposer.applied_index()));
  Sample(&out, "etcd_mvcc_db_total_size_in_bytes", "Total size of the underlying database physically allocated in bytes.",
         "gauge", static_cast<double>(member.engine().ApproximateSize()));
  Sample(&out, "etcd_debugging_mvcc_current_revision", "The current revision of store.", "gauge",
         static_cast<double>(member.state_machine().revision()));
  Sample(&out, "leasehold_leases", "Leases in the LeaseCollection (blob leases' timers included).", "gauge",
         static_cast<double>(member.state_machine().leases().size()));
  Sample(&out, "leasehold_lease_expired_revokes_total", "Revocations of expired leases proposed by this member.",
         "counter", static_cast<double>(expired_lease_revokes.load()));
  size_t blobs = 0;
  member.state_machine().ReadBlobTable([&](const storage::BlobTable& table) { blobs = table.blob_count(); });
  Sample(&out, "leasehold_blob_blobs", "Blobs stored by the Azure Blob adapter.", "gauge", static_cast<double>(blobs));
  wal_fsync.Render("etcd_disk_wal_fsync_duration_seconds",
                   "The latency distributions of fsync called by the Raft log (whole synced write).", &out);
  absl::StrAppend(&out, "# HELP leasehold_blob_requests_total Azure Blob adapter answers by HTTP status.\n",
                  "# TYPE leasehold_blob_requests_total counter\n");
  for (size_t i = 0; i < blob_answers_.size(); ++i) {
    const uint64_t n = blob_answers_[i].load(std::memory_order_relaxed);
    if (n != 0) absl::StrAppend(&out, "leasehold_blob_requests_total{code=\"", i + 100, "\"} ", n, "\n");
  }
  return out;
}

}  // namespace leasehold::server
