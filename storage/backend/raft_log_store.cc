#include "storage/backend/raft_log_store.h"

#include "absl/strings/str_cat.h"

namespace leasehold::storage {
namespace {
constexpr std::string_view kHardStateKey = "raft_hard_state";
constexpr std::string_view kConfStateKey = "conf_state";
constexpr std::string_view kSnapshotKey = "raft_snapshot";
}  // namespace

absl::StatusOr<std::unique_ptr<RaftLogStore>> RaftLogStore::Open(Engine* engine) {
  std::unique_ptr<RaftLogStore> store(new RaftLogStore(engine));
  if (auto hs = engine->Get(keys::Meta(kHardStateKey)); hs.ok()) {
    if (!store->hard_state_.ParseFromString(*hs))
      return absl::DataLossError("malformed raft hard state");
  } else if (!absl::IsNotFound(hs.status())) {
    return hs.status();
  }
  if (auto cs = engine->Get(keys::Meta(kConfStateKey)); cs.ok()) {
    if (!store->conf_state_.ParseFromString(*cs))
      return absl::DataLossError("malformed raft membership");
  } else if (!absl::IsNotFound(cs.status())) {
    return cs.status();
  }
  if (auto snap = engine->Get(keys::Meta(kSnapshotKey)); snap.ok()) {
    raft::pb::SnapshotMetadata metadata;
    if (!metadata.ParseFromString(*snap))
      return absl::DataLossError("malformed raft snapshot record");
    store->snapshot_index_ = metadata.index();
    store->snapshot_term_ = metadata.term();
    store->first_index_ = metadata.index() + 1;
  } else if (!absl::IsNotFound(snap.status())) {
    return snap.status();
  }
  // Index the stored entries: their terms, and that they are contiguous.
  auto it = engine->NewIterator();
  bool first = true;
  for (it->Seek(std::string(1, keys::kLogPrefix)); it->Valid(); it->Next()) {
    if (it->key().size() != 9 || it->key()[0] != keys::kLogPrefix) break;
    const uint64_t index = ReadBigEndian64(std::string_view(it->key().data() + 1, 8));
    raft::pb::Entry entry;
    if (!entry.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) ||
        entry.index() != index) {
      return absl::DataLossError(absl::StrCat("malformed raft log entry ", index));
    }
    if (index <= store->snapshot_index_) continue;  // compaction interrupted: already covered
    if (first) {
      if (index != store->first_index_) {
        return absl::DataLossError(
            absl::StrCat("raft log starts at ", index, ", expected ", store->first_index_));
      }
      first = false;
    } else if (index != store->LastIndex() + 1) {
      return absl::DataLossError(absl::StrCat("raft log has a gap before entry ", index));
    }
    store->terms_.push_back(entry.term());
  }
  if (!it->status().ok()) return absl::DataLossError(it->status().ToString());
  return store;
}

raft::InitialState RaftLogStore::GetInitialState() const {
  raft::InitialState state;
  state.hard_state = hard_state_;
  state.conf_state = conf_state_;
  return state;
}

absl::StatusOr<std::vector<raft::pb::Entry>> RaftLogStore::Entries(uint64_t lo, uint64_t hi,
                                                                   uint64_t max_bytes) const {
  if (lo < first_index_) return raft::CompactedError();
  if (hi > LastIndex() + 1) return raft::UnavailableError();
  std::vector<raft::pb::Entry> out;
  if (lo >= hi) return out;
  auto it = engine_->NewIterator(keys::LogEntry(hi));
  uint64_t bytes = 0;
  for (it->Seek(keys::LogEntry(lo)); it->Valid() && lo < hi; it->Next(), ++lo) {
    raft::pb::Entry entry;
    if (!entry.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) ||
        entry.index() != lo) {
      return absl::DataLossError(absl::StrCat("raft log entry ", lo, " is unreadable"));
    }
    bytes += entry.ByteSizeLong();
    if (!out.empty() && bytes > max_bytes) break;
    out.push_back(std::move(entry));
  }
  if (!it->status().ok()) return absl::DataLossError(it->status().ToString());
  if (out.empty()) return absl::DataLossError(absl::StrCat("raft log entry ", lo, " is missing"));
  return out;
}

absl::StatusOr<uint64_t> RaftLogStore::Term(uint64_t index) const {
  if (index + 1 == first_index_) return snapshot_term_;
  if (index < first_index_) return raft::CompactedError();
  if (index > LastIndex()) return raft::UnavailableError();
  return terms_[index - first_index_];
}

absl::StatusOr<raft::pb::Snapshot> RaftLogStore::GetSnapshot() const {
  if (snapshot_source_ && snapshot_index_ > 0) return snapshot_source_();
  // Nothing was compacted: the only snapshot is the empty one before entry 1.
  raft::pb::Snapshot snapshot;
  snapshot.mutable_metadata()->set_index(snapshot_index_);
  snapshot.mutable_metadata()->set_term(snapshot_term_);
  *snapshot.mutable_metadata()->mutable_conf_state() = conf_state_;
  return snapshot;
}

void RaftLogStore::Append(const std::vector<raft::pb::Entry>& entries, rocksdb::WriteBatch* batch) {
  if (entries.empty()) return;
  const uint64_t start = entries.front().index();
  // Drop the stored suffix from `start` on; the new entries replace it.
  if (start <= LastIndex()) {
    batch->DeleteRange(keys::LogEntry(start), keys::LogEntry(LastIndex() + 1));
    terms_.resize(start - first_index_);
  }
  std::string buffer;
  for (const raft::pb::Entry& entry : entries) {
    buffer.clear();
    entry.SerializeToString(&buffer);
    batch->Put(keys::LogEntry(entry.index()), buffer);
    terms_.push_back(entry.term());
  }
}

void RaftLogStore::DiscardAfter(uint64_t index, rocksdb::WriteBatch* batch) {
  if (index >= LastIndex() || index + 1 < first_index_) return;
  batch->DeleteRange(keys::LogEntry(index + 1), keys::LogEntry(LastIndex() + 1));
  terms_.resize(index + 1 - first_index_);
}

void RaftLogStore::Compact(uint64_t index, rocksdb::WriteBatch* batch) {
  if (index < first_index_ || index > LastIndex()) return;
  raft::pb::SnapshotMetadata metadata;
  metadata.set_index(index);
  metadata.set_term(terms_[index - first_index_]);
  batch->Put(keys::Meta(kSnapshotKey), metadata.SerializeAsString());
  batch->DeleteRange(keys::LogEntry(first_index_), keys::LogEntry(index + 1));
  terms_.erase(terms_.begin(),
               terms_.begin() + static_cast<std::ptrdiff_t>(index + 1 - first_index_));
  snapshot_index_ = index;
  snapshot_term_ = metadata.term();
  first_index_ = index + 1;
}

void RaftLogStore::ApplySnapshot(const raft::pb::SnapshotMetadata& metadata,
                                 rocksdb::WriteBatch* batch) {
  raft::pb::SnapshotMetadata position;
  position.set_index(metadata.index());
  position.set_term(metadata.term());
  batch->Put(keys::Meta(kSnapshotKey), position.SerializeAsString());
  batch->DeleteRange(keys::LogEntry(0), keys::LogEntry(~0ULL));
  batch->Delete(keys::LogEntry(~0ULL));
  terms_.clear();
  snapshot_index_ = metadata.index();
  snapshot_term_ = metadata.term();
  first_index_ = metadata.index() + 1;
  conf_state_ = metadata.conf_state();
  PutConfState(metadata.conf_state(), batch);
}

void RaftLogStore::SetHardState(const raft::pb::HardState& hard_state, rocksdb::WriteBatch* batch) {
  hard_state_ = hard_state;
  batch->Put(keys::Meta(kHardStateKey), hard_state.SerializeAsString());
}

bool RaftLogStore::IsConfStateKey(std::string_view key) { return key == keys::Meta(kConfStateKey); }

void RaftLogStore::PutConfState(const raft::pb::ConfState& conf_state, rocksdb::WriteBatch* batch) {
  batch->Put(keys::Meta(kConfStateKey), conf_state.SerializeAsString());
}

}  // namespace leasehold::storage
