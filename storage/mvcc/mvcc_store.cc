#include "storage/mvcc/mvcc_store.h"

#include <algorithm>

#include "common/etcd_errors.h"

namespace leasehold::storage {
namespace {

constexpr char kPutFlag = 'p';
constexpr char kTombstoneFlag = 't';

std::string EncodeVersion(char flag, const mvccpb::KeyValue& kv) {
  std::string out(1, flag);
  kv.AppendToString(&out);
  return out;
}

}  // namespace

mvccpb::KeyValue MvccStore::ToKeyValue(const std::string& key, const KeyRecord& record) {
  mvccpb::KeyValue kv;
  kv.set_key(key);
  kv.set_create_revision(record.create_revision);
  kv.set_mod_revision(record.mod_revision);
  kv.set_version(record.version);
  kv.set_value(record.value);
  kv.set_lease(record.lease);
  return kv;
}

template <typename Fn>
void MvccStore::ForEachRecord(std::string_view key, std::string_view range_end, Fn&& fn) const {
  if (range_end.empty()) {
    auto it = by_key_.find(key);
    if (it != by_key_.end()) fn((*it)->first, (*it)->second);
    return;
  }
  const bool to_end = range_end == std::string_view("\0", 1);
  if (!to_end && range_end <= key) return;
  for (auto it = index_.lower_bound(key); it != index_.end(); ++it) {
    if (!to_end && std::string_view(it->first) >= range_end) break;
    if (!fn(it->first, it->second)) break;
  }
}

template <typename Fn>
void MvccStore::ForEachLiveRecord(std::string_view key, std::string_view range_end, Fn&& fn) const {
  if (range_end.empty()) {
    auto it = by_key_.find(key);
    if (it != by_key_.end() && (*it)->second.live) fn((*it)->first, (*it)->second);
    return;
  }
  const bool to_end = range_end == std::string_view("\0", 1);
  if (!to_end && range_end <= key) return;
  for (auto it = live_.lower_bound(key); it != live_.end(); ++it) {
    if (!to_end && std::string_view((*it)->first) >= range_end) break;
    if (!fn((*it)->first, (*it)->second)) break;
  }
}

const KeyRecord* MvccStore::FindLive(std::string_view key) const {
  auto it = by_key_.find(key);
  return it != by_key_.end() && (*it)->second.live ? &(*it)->second : nullptr;
}

void MvccStore::ForEachLive(
    std::string_view key, std::string_view range_end,
    const std::function<void(const std::string&, const KeyRecord&)>& fn) const {
  ForEachLiveRecord(key, range_end, [&](std::string_view k, const KeyRecord& r) {
    fn(std::string(k), r);
    return true;
  });
}

void MvccStore::RecordVersion(const Revision& rev, std::string encoded,
                              rocksdb::WriteBatch* batch) {
  std::string key = keys::Revision(rev);
  batch->Put(key, encoded);
  unflushed_[std::move(key)] = std::move(encoded);
}

absl::StatusOr<mvccpb::KeyValue> MvccStore::LoadVersion(const Revision& rev) const {
  const std::string key = keys::Revision(rev);
  absl::StatusOr<std::string> raw;
  if (auto it = unflushed_.find(key); it != unflushed_.end()) {
    raw = it->second;
  } else {
    raw = engine_->Get(key);
  }
  if (!raw.ok()) return absl::DataLossError("missing version record: " + raw.status().ToString());
  mvccpb::KeyValue kv;
  if (raw->empty() || !kv.ParseFromArray(raw->data() + 1, static_cast<int>(raw->size() - 1))) {
    return absl::DataLossError("malformed version record");
  }
  return kv;
}

absl::StatusOr<RangeResult> MvccStore::Range(std::string_view key, std::string_view range_end,
                                             const RangeOptions& options) const {
  RangeResult result;
  int64_t rev = options.revision > 0 ? options.revision : current_;
  if (rev > current_) return errors::FutureRevision();
  if (rev < compacted_) return errors::Compacted();
  absl::Status status;
  if (rev == current_) {
    ForEachLiveRecord(key, range_end, [&](std::string_view k, const KeyRecord& r) {
      ++result.count;
      if (!options.count_only &&
          (options.limit <= 0 || static_cast<int64_t>(result.kvs.size()) < options.limit)) {
        result.kvs.push_back(ToKeyValue(std::string(k), r));
      }
      return true;
    });
    return result;
  }
  ForEachRecord(key, range_end, [&](std::string_view, const KeyRecord& r) {
    // The last change at or below `rev` decides whether the key existed then.
    auto it = std::upper_bound(r.changes.begin(), r.changes.end(), rev,
                               [](int64_t v, const KeyChange& c) { return v < c.main; });
    if (it == r.changes.begin()) return true;
    const KeyChange& change = *std::prev(it);
    if (change.tombstone) return true;
    ++result.count;
    if (options.count_only ||
        (options.limit > 0 && static_cast<int64_t>(result.kvs.size()) >= options.limit)) {
      return true;
    }
    auto kv = LoadVersion(change.rev());
    if (!kv.ok()) {
      status = kv.status();
      return false;
    }
    result.kvs.push_back(std::move(*kv));
    return true;
  });
  if (!status.ok()) return status;
  return result;
}

bool MvccStore::InRange(std::string_view key, std::string_view start, std::string_view range_end) {
  if (range_end.empty()) return key == start;
  if (range_end == std::string_view("\0", 1)) return key >= start;
  return key >= start && key < range_end;
}

absl::Status MvccStore::History(int64_t from, int64_t to, std::string_view key,
                                std::string_view range_end, bool with_prev_kv,
                                std::vector<mvccpb::Event>* out) const {
  if (from < compacted_) return errors::Compacted();
  if (from > to) return absl::OkStatus();
  auto it = engine_->NewIterator(keys::Revision({to + 1, 0}));
  for (it->Seek(keys::Revision({from, 0})); it->Valid(); it->Next()) {
    rocksdb::Slice v = it->value();
    mvccpb::Event event;
    if (v.size() == 0 ||
        !event.mutable_kv()->ParseFromArray(v.data() + 1, static_cast<int>(v.size() - 1))) {
      return absl::DataLossError("malformed version record");
    }
    if (!InRange(event.kv().key(), key, range_end)) continue;
    if (v[0] == kTombstoneFlag) event.set_type(mvccpb::Event::DELETE);
    if (with_prev_kv) {
      // The version before this one is the key's previous change, when that was a put.
      const Revision rev{
          static_cast<int64_t>(ReadBigEndian64(std::string_view(it->key().data() + 1, 8))),
          static_cast<int64_t>(ReadBigEndian64(std::string_view(it->key().data() + 9, 8)))};
      auto record = by_key_.find(event.kv().key());
      if (record != by_key_.end()) {
        const auto& changes = (*record)->second.changes;
        auto at =
            std::lower_bound(changes.begin(), changes.end(), rev,
                             [](const KeyChange& c, const Revision& r) { return c.rev() < r; });
        if (at != changes.begin() && !std::prev(at)->tombstone) {
          auto prev = LoadVersion(std::prev(at)->rev());
          if (!prev.ok()) return prev.status();
          *event.mutable_prev_kv() = std::move(*prev);
        }
      }
    }
    out->push_back(std::move(event));
  }
  if (!it->status().ok())
    return absl::DataLossError("history scan failed: " + it->status().ToString());
  return absl::OkStatus();
}

absl::Status MvccStore::Compact(int64_t revision, rocksdb::WriteBatch* batch,
                                uint64_t* versions_deleted) {
  if (revision <= compacted_) return errors::Compacted();
  if (revision > current_) return errors::FutureRevision();
  for (auto it = index_.begin(); it != index_.end();) {
    auto& changes = it->second.changes;
    auto keep = std::upper_bound(changes.begin(), changes.end(), revision,
                                 [](int64_t v, const KeyChange& c) { return v < c.main; });
    // `keep` is the first change above `revision`; the one before it stays unless it is a
    // tombstone.
    if (keep != changes.begin() && !std::prev(keep)->tombstone) --keep;
    for (auto c = changes.begin(); c != keep; ++c) {
      unflushed_.erase(keys::Revision(c->rev()));
      batch->Delete(keys::Revision(c->rev()));
    }
    if (versions_deleted != nullptr) *versions_deleted += keep - changes.begin();
    changes.erase(changes.begin(), keep);
    if (changes.empty() && !it->second.live) {
      by_key_.erase(&*it);
      it = index_.erase(it);
    } else {
      ++it;
    }
  }
  compacted_ = revision;
  Engine::PutMetaU64(batch, "compact", static_cast<uint64_t>(revision));
  return absl::OkStatus();
}

absl::Status MvccStore::Restore(
    const std::function<void(const std::string& key, const KeyRecord&)>& on_live_key) {
  live_.clear();
  by_key_.clear();
  index_.clear();
  auto it = engine_->NewIterator(std::string(1, keys::kRevisionPrefix + 1));
  int64_t last_main = 1;
  for (it->Seek(std::string(1, keys::kRevisionPrefix)); it->Valid(); it->Next()) {
    rocksdb::Slice k = it->key();
    if (k.size() == 0 || k[0] != keys::kRevisionPrefix) break;
    if (k.size() != 17) return absl::DataLossError("malformed revision key");
    Revision rev{static_cast<int64_t>(ReadBigEndian64(std::string_view(k.data() + 1, 8))),
                 static_cast<int64_t>(ReadBigEndian64(std::string_view(k.data() + 9, 8)))};
    rocksdb::Slice v = it->value();
    mvccpb::KeyValue kv;
    if (v.size() == 0 || (v[0] != kPutFlag && v[0] != kTombstoneFlag) ||
        !kv.ParseFromArray(v.data() + 1, static_cast<int>(v.size() - 1))) {
      return absl::DataLossError("malformed version record");
    }
    KeyRecord& record = index_[kv.key()];
    const bool tombstone = v[0] == kTombstoneFlag;
    record.changes.push_back({rev, tombstone});
    record.live = !tombstone;
    record.create_revision = tombstone ? 0 : kv.create_revision();
    record.mod_revision = tombstone ? 0 : kv.mod_revision();
    record.version = tombstone ? 0 : kv.version();
    record.lease = tombstone ? 0 : kv.lease();
    record.value = tombstone ? std::string() : kv.value();
    last_main = std::max(last_main, rev.main);
  }
  if (!it->status().ok())
    return absl::DataLossError("storage scan failed: " + it->status().ToString());
  auto meta_rev = engine_->GetMetaU64("rev");
  if (!meta_rev.ok()) return meta_rev.status();
  auto meta_compact = engine_->GetMetaU64("compact");
  if (!meta_compact.ok()) return meta_compact.status();
  const bool ever_compacted = engine_->Get(keys::Meta("compact")).ok();
  current_ = std::max<int64_t>(last_main, static_cast<int64_t>(*meta_rev));
  compacted_ = ever_compacted ? static_cast<int64_t>(*meta_compact) : -1;
  live_.clear();
  by_key_.reserve(index_.size());
  for (Entry& entry : index_) {
    by_key_.insert(&entry);
    if (!entry.second.live) continue;
    live_.insert(live_.end(), &entry);  // index_ is in key order
    on_live_key(entry.first, entry.second);
  }
  return absl::OkStatus();
}

std::optional<mvccpb::KeyValue> MvccStore::WriteTxn::Put(const std::string& key,
                                                         const std::string& value, int64_t lease) {
  auto found = store_->by_key_.find(std::string_view(key));
  if (found == store_->by_key_.end()) {
    found = store_->by_key_.insert(&*store_->index_.try_emplace(key).first).first;
  }
  Entry* entry = *found;
  KeyRecord& record = entry->second;
  std::optional<mvccpb::KeyValue> prev;
  if (record.live) prev = ToKeyValue(key, record);
  Revision rev{main_, next_sub_++};
  if (!record.live) {
    record.create_revision = main_;
    record.version = 0;
    store_->live_.insert(entry);
  }
  record.live = true;
  record.version += 1;
  record.mod_revision = main_;
  record.lease = lease;
  record.value = value;
  record.changes.push_back({rev, false});
  mvccpb::KeyValue kv = ToKeyValue(key, record);
  store_->RecordVersion(rev, EncodeVersion(kPutFlag, kv), batch_);
  if (events_ != nullptr) {
    mvccpb::Event& event = events_->emplace_back();
    event.set_type(mvccpb::Event::PUT);
    *event.mutable_kv() = std::move(kv);
    if (prev) *event.mutable_prev_kv() = *prev;
  }
  return prev;
}

std::vector<mvccpb::KeyValue> MvccStore::WriteTxn::DeleteRange(std::string_view key,
                                                               std::string_view range_end) {
  std::vector<std::string> victims;
  store_->ForEachLiveRecord(key, range_end, [&](std::string_view k, const KeyRecord&) {
    victims.emplace_back(k);
    return true;
  });
  std::vector<mvccpb::KeyValue> deleted;
  deleted.reserve(victims.size());
  for (const std::string& k : victims) {
    Entry* entry = *store_->by_key_.find(std::string_view(k));
    KeyRecord& record = entry->second;
    deleted.push_back(ToKeyValue(k, record));
    Revision rev{main_, next_sub_++};
    mvccpb::KeyValue tombstone;
    tombstone.set_key(k);
    tombstone.set_mod_revision(main_);
    record.live = false;
    store_->live_.erase(entry);
    record.create_revision = record.mod_revision = record.version = record.lease = 0;
    record.value.clear();
    record.changes.push_back({rev, true});
    store_->RecordVersion(rev, EncodeVersion(kTombstoneFlag, tombstone), batch_);
    if (events_ != nullptr) {
      mvccpb::Event& event = events_->emplace_back();
      event.set_type(mvccpb::Event::DELETE);
      *event.mutable_kv() = std::move(tombstone);
      *event.mutable_prev_kv() = deleted.back();
    }
  }
  return deleted;
}

void MvccStore::WriteTxn::Finish() {
  if (!changed()) return;
  store_->current_ = main_;
  Engine::PutMetaU64(batch_, "rev", static_cast<uint64_t>(main_));
}

}  // namespace leasehold::storage
