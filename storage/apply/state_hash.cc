// StateMachine::HashKv and HashAll: SHA-256 over a pinned view of the engine's records, folded to
// the 32 bits etcd's API carries.
#include <memory>

#include "common/etcd_errors.h"
#include "common/sha256.h"
#include "storage/apply/state_machine.h"
#include "storage/backend/revision.h"

namespace leasehold::storage {
namespace {

// Hashes each record as (key length, key, value length, value), so no two record lists can run
// together into the same bytes.
void HashRecord(Sha256& sha, rocksdb::Slice key, rocksdb::Slice value) {
  for (rocksdb::Slice part : {key, value}) {
    std::string size;
    AppendBigEndian64(&size, part.size());
    sha.Update(size);
    sha.Update(std::string_view(part.data(), part.size()));
  }
}

// The digest's first 32 bits: what etcd's API carries.
uint32_t Fold(const std::string& digest) {
  return static_cast<uint32_t>(ReadBigEndian64(digest) >> 32);
}

// Whether everything applied is in the engine (see HashKv).
bool AllFlushed(const rocksdb::WriteBatch* unflushed) { return unflushed->Count() == 0; }

}  // namespace

absl::StatusOr<StateMachine::KvHash> StateMachine::HashKv(int64_t revision) const {
  std::shared_ptr<const rocksdb::Snapshot> view;
  KvHash result;
  {
    // Versions applied but not yet flushed are not in the engine; the apply thread flushes after
    // each group, so this waits at most one group's apply.
    mu_.ReaderLockWhen(absl::Condition(&AllFlushed, &unflushed_));
    const int64_t current = store_.revision();
    const int64_t compacted = store_.compacted_revision();
    absl::Status refused;
    if (revision > 0 && compacted > 0 && revision <= compacted) refused = errors::Compacted();
    if (revision > current) refused = errors::FutureRevision();
    if (refused.ok()) view = engine_->Pin();
    mu_.ReaderUnlock();
    if (!refused.ok()) return refused;
    result.revision = revision > 0 ? revision : current;
    result.compact_revision = compacted;
  }
  Sha256 sha;
  auto it = engine_->NewIterator(view.get());
  const std::string end = keys::Revision({result.revision + 1, 0});
  for (it->Seek(keys::Revision({0, 0})); it->Valid() && it->key().compare(end) < 0; it->Next()) {
    HashRecord(sha, it->key(), it->value());
  }
  if (!it->status().ok())
    return absl::DataLossError("reading the store for its hash: " + it->status().ToString());
  result.hash = Fold(sha.Final());
  return result;
}

absl::StatusOr<uint32_t> StateMachine::HashAll() const {
  std::shared_ptr<const rocksdb::Snapshot> view;
  mu_.ReaderLockWhen(absl::Condition(&AllFlushed, &unflushed_));
  view = engine_->Pin();
  mu_.ReaderUnlock();
  Sha256 sha;
  auto it = engine_->NewIterator(view.get());
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const rocksdb::Slice key = it->key();
    if (keys::IsMemberLocal(std::string_view(key.data(), key.size()))) continue;
    HashRecord(sha, key, it->value());
  }
  if (!it->status().ok())
    return absl::DataLossError("reading the store for its hash: " + it->status().ToString());
  return Fold(sha.Final());
}

}  // namespace leasehold::storage
