// Storage error helpers and entry size accounting.
#include "raft/storage.h"

namespace leasehold::raft {

absl::Status CompactedError() {
  return absl::OutOfRangeError("requested index is unavailable due to compaction");
}
bool IsCompacted(const absl::Status& status) {
  return status.code() == absl::StatusCode::kOutOfRange;
}
absl::Status UnavailableError() {
  return absl::NotFoundError("requested entry at index is unavailable");
}
bool IsEntryUnavailable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kNotFound;
}
absl::Status SnapshotOutOfDateError() {
  return absl::FailedPreconditionError("requested index is older than the existing snapshot");
}

uint64_t EntriesSize(const std::vector<pb::Entry>& entries) {
  uint64_t total = 0;
  for (const pb::Entry& e : entries) total += e.ByteSizeLong();
  return total;
}

void LimitSize(std::vector<pb::Entry>& entries, uint64_t max_bytes) {
  if (entries.empty()) return;
  uint64_t size = entries[0].ByteSizeLong();
  size_t keep = 1;
  while (keep < entries.size()) {
    size += entries[keep].ByteSizeLong();
    if (size > max_bytes) break;
    ++keep;
  }
  entries.resize(keep);
}

}  // namespace leasehold::raft
