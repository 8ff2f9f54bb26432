// MemoryStorage implementation.
#include "raft/memory_storage.h"

#include "raft/check.h"

namespace leasehold::raft {

MemoryStorage::MemoryStorage() { entries_.emplace_back(); }

InitialState MemoryStorage::GetInitialState() const {
  return InitialState{hard_state_, snapshot_.metadata().conf_state()};
}

uint64_t MemoryStorage::FirstIndex() const { return entries_[0].index() + 1; }
uint64_t MemoryStorage::LastIndex() const { return entries_[0].index() + entries_.size() - 1; }

absl::StatusOr<std::vector<pb::Entry>> MemoryStorage::Entries(uint64_t lo, uint64_t hi,
                                                              uint64_t max_bytes) const {
  const uint64_t offset = entries_[0].index();
  if (lo <= offset) return CompactedError();
  RAFT_CHECK(hi <= LastIndex() + 1);
  RAFT_CHECK(lo <= hi);
  std::vector<pb::Entry> out(entries_.begin() + (lo - offset), entries_.begin() + (hi - offset));
  LimitSize(out, max_bytes);
  return out;
}

absl::StatusOr<uint64_t> MemoryStorage::Term(uint64_t index) const {
  const uint64_t offset = entries_[0].index();
  if (index < offset) return CompactedError();
  if (index - offset >= entries_.size()) return UnavailableError();
  return entries_[index - offset].term();
}

absl::StatusOr<pb::Snapshot> MemoryStorage::GetSnapshot() const { return snapshot_; }

absl::Status MemoryStorage::ApplySnapshot(const pb::Snapshot& snapshot) {
  if (snapshot.metadata().index() <= snapshot_.metadata().index() &&
      snapshot_.metadata().index() != 0) {
    return SnapshotOutOfDateError();
  }
  snapshot_ = snapshot;
  entries_.clear();
  pb::Entry dummy;
  dummy.set_index(snapshot.metadata().index());
  dummy.set_term(snapshot.metadata().term());
  entries_.push_back(std::move(dummy));
  return absl::OkStatus();
}

absl::StatusOr<pb::Snapshot> MemoryStorage::CreateSnapshot(uint64_t index,
                                                           const pb::ConfState& conf_state,
                                                           std::string data) {
  if (index <= snapshot_.metadata().index()) return SnapshotOutOfDateError();
  const uint64_t offset = entries_[0].index();
  if (index > LastIndex()) return UnavailableError();
  snapshot_.mutable_metadata()->set_index(index);
  snapshot_.mutable_metadata()->set_term(entries_[index - offset].term());
  *snapshot_.mutable_metadata()->mutable_conf_state() = conf_state;
  snapshot_.set_data(std::move(data));
  return snapshot_;
}

absl::Status MemoryStorage::Compact(uint64_t compact_index) {
  const uint64_t offset = entries_[0].index();
  if (compact_index <= offset) return CompactedError();
  if (compact_index > LastIndex()) return UnavailableError();
  const uint64_t i = compact_index - offset;
  std::vector<pb::Entry> kept;
  kept.reserve(entries_.size() - i);
  pb::Entry dummy;
  dummy.set_index(entries_[i].index());
  dummy.set_term(entries_[i].term());
  kept.push_back(std::move(dummy));
  for (size_t k = i + 1; k < entries_.size(); ++k) kept.push_back(std::move(entries_[k]));
  entries_ = std::move(kept);
  return absl::OkStatus();
}

absl::Status MemoryStorage::Append(const std::vector<pb::Entry>& entries) {
  if (entries.empty()) return absl::OkStatus();
  const uint64_t first = FirstIndex();
  const uint64_t last_new = entries.back().index();
  if (last_new < first) return absl::OkStatus();  // everything already compacted
  size_t skip = entries[0].index() < first ? first - entries[0].index() : 0;
  const uint64_t start = entries[skip].index();
  const uint64_t offset = entries_[0].index();
  RAFT_CHECK(start <= LastIndex() + 1);
  entries_.resize(start - offset);  // drop the conflicting (or overwritten) suffix
  for (size_t k = skip; k < entries.size(); ++k) entries_.push_back(entries[k]);
  return absl::OkStatus();
}

}  // namespace leasehold::raft
