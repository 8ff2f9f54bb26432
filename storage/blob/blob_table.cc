#include "storage/blob/blob_table.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace leasehold::storage {
namespace {

constexpr char kBlobPrefix = 'a';
constexpr std::string_view kRevisionMeta = "blob_revision";

std::string EngineKey(const BlobKey& key) {
  if (key.is_container()) return std::string{kBlobPrefix, 'c'} + key.container;
  return std::string{kBlobPrefix, 'b'} + key.container + '/' + key.blob;
}

std::string ContentKey(const BlobKey& key) {
  return std::string{kBlobPrefix, 'd'} + key.container + '/' + key.blob;
}

// A record's bytes with its maps (metadata, tags) in key order: protobuf otherwise orders map
// entries differently from one process or object to the next, and members that applied the same
// entries would store, and hash, different bytes.
std::string DeterministicBytes(const internalpb::BlobRecord& record) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    record.SerializeToCodedStream(&coded);
  }
  return bytes;
}

}  // namespace

absl::Status BlobTable::Restore(const Engine& engine) {
  containers_.clear();
  blobs_.clear();
  core_lease_owner_.clear();
  contents_.clear();
  auto it = engine.NewIterator();
  for (it->Seek(std::string(1, kBlobPrefix)); it->Valid(); it->Next()) {
    std::string_view k(it->key().data(), it->key().size());
    if (k.size() < 2 || k[0] != kBlobPrefix) break;
    if (k[1] == 'd') {
      contents_[std::string(k.substr(2))] = std::string(it->value().data(), it->value().size());
      continue;
    }
    internalpb::BlobRecord record;
    if (!record.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return absl::DataLossError("malformed blob record");
    }
    BlobKey key;
    std::string_view name = k.substr(2);
    if (k[1] == 'c') {
      key.container = std::string(name);
    } else {
      size_t slash = name.find('/');
      if (slash == std::string_view::npos) return absl::DataLossError("malformed blob record key");
      key.container = std::string(name.substr(0, slash));
      key.blob = std::string(name.substr(slash + 1));
    }
    TrackCoreLease(key, nullptr, &record);
    (key.is_container() ? containers_[key.container] : blobs_[BlobMapKey(key)]) = std::move(record);
  }
  if (!it->status().ok())
    return absl::DataLossError("blob scan failed: " + it->status().ToString());
  auto revision = engine.GetMetaU64(kRevisionMeta);
  if (!revision.ok()) return revision.status();
  revision_ = static_cast<int64_t>(*revision);
  return absl::OkStatus();
}

const internalpb::BlobRecord* BlobTable::Find(const BlobKey& key) const {
  if (key.is_container()) {
    auto it = containers_.find(key.container);
    return it == containers_.end() ? nullptr : &it->second;
  }
  auto it = blobs_.find(BlobMapKey(key));
  return it == blobs_.end() ? nullptr : &it->second;
}

void BlobTable::Put(const BlobKey& key, internalpb::BlobRecord record, rocksdb::WriteBatch* batch) {
  batch->Put(EngineKey(key), DeterministicBytes(record));
  auto& slot = key.is_container() ? containers_[key.container] : blobs_[BlobMapKey(key)];
  TrackCoreLease(key, &slot, &record);
  slot = std::move(record);
}

const std::string& BlobTable::Content(const BlobKey& key) const {
  static const std::string* const kEmpty = new std::string();
  auto it = contents_.find(BlobMapKey(key));
  return it == contents_.end() ? *kEmpty : it->second;
}

void BlobTable::PutContent(const BlobKey& key, std::string content, rocksdb::WriteBatch* batch) {
  if (content.empty()) {
    contents_.erase(BlobMapKey(key));
    batch->Delete(ContentKey(key));
    return;
  }
  batch->Put(ContentKey(key), content);
  contents_[BlobMapKey(key)] = std::move(content);
}

void BlobTable::Erase(const BlobKey& key, rocksdb::WriteBatch* batch) {
  if (key.is_container()) {
    const std::string prefix = key.container + '/';
    for (auto it = blobs_.lower_bound(prefix);
         it != blobs_.end() && it->first.starts_with(prefix);) {
      BlobKey blob{key.container, it->first.substr(prefix.size())};
      TrackCoreLease(blob, &it->second, nullptr);
      batch->Delete(EngineKey(blob));
      batch->Delete(ContentKey(blob));
      contents_.erase(it->first);
      it = blobs_.erase(it);
    }
    if (auto it = containers_.find(key.container); it != containers_.end()) {
      TrackCoreLease(key, &it->second, nullptr);
      containers_.erase(it);
    }
  } else if (auto it = blobs_.find(BlobMapKey(key)); it != blobs_.end()) {
    TrackCoreLease(key, &it->second, nullptr);
    blobs_.erase(it);
    contents_.erase(BlobMapKey(key));
    batch->Delete(ContentKey(key));
  }
  batch->Delete(EngineKey(key));
}

int64_t BlobTable::NextRevision(rocksdb::WriteBatch* batch) {
  ++revision_;
  Engine::PutMetaU64(batch, kRevisionMeta, static_cast<uint64_t>(revision_));
  return revision_;
}

std::optional<BlobKey> BlobTable::OwnerOfCoreLease(int64_t core_lease_id) const {
  auto it = core_lease_owner_.find(core_lease_id);
  if (it == core_lease_owner_.end()) return std::nullopt;
  return it->second;
}

void BlobTable::TrackCoreLease(const BlobKey& key, const internalpb::BlobRecord* old_record,
                               const internalpb::BlobRecord* new_record) {
  const int64_t old_id = old_record != nullptr ? old_record->lease().core_lease_id() : 0;
  const int64_t new_id = new_record != nullptr ? new_record->lease().core_lease_id() : 0;
  if (old_id == new_id) return;
  if (old_id != 0) core_lease_owner_.erase(old_id);
  if (new_id != 0) core_lease_owner_[new_id] = key;
}

void BlobTable::ForEachContainer(
    std::string_view from,
    const std::function<bool(const std::string&, const internalpb::BlobRecord&)>& fn) const {
  for (auto it = containers_.lower_bound(from); it != containers_.end(); ++it) {
    if (!fn(it->first, it->second)) return;
  }
}

void BlobTable::ForEachBlob(
    const std::string& container, std::string_view from,
    const std::function<bool(std::string_view, const internalpb::BlobRecord&)>& fn) const {
  const std::string prefix = container + '/';
  for (auto it = blobs_.lower_bound(prefix + std::string(from));
       it != blobs_.end() && it->first.starts_with(prefix); ++it) {
    if (!fn(std::string_view(it->first).substr(prefix.size()), it->second)) return;
  }
}

}  // namespace leasehold::storage
