// The Azure Blob adapter's replicated records: containers and blobs by name, each an
// internalpb.BlobRecord, blobs' contents (apart from the records, so that changing a record never
// rewrites the content), and the counter their ETags come from. Persisted in the engine under
// prefix 'a' ('a' 'c' container, 'a' 'b' container '/' blob, 'a' 'd' container '/' blob for the
// content, meta "blob_revision"), so they travel in snapshots with everything else and are
// invisible to the etcd API.
//
// Also answers which record a core lease (LeaseCollection) is timing, so the state machine can turn
// a revoked core lease into a blob lease's expiry or end of break.
//
// Not thread-safe: the state machine serialises writers and guards readers with its own lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "leasehold/internal.pb.h"
#include "rocksdb/write_batch.h"
#include "storage/backend/engine.h"

namespace leasehold::storage {

// A container (blob empty) or a blob.
struct BlobKey {
  std::string container;
  std::string blob;
  bool is_container() const { return blob.empty(); }
};

class BlobTable {
 public:
  // Replaces the in-memory table with the engine's records. DataLoss on a malformed record.
  [[nodiscard]] absl::Status Restore(const Engine& engine);

  const internalpb::BlobRecord* Find(const BlobKey& key) const;
  // Inserts or replaces the record, persisting it into `batch`.
  void Put(const BlobKey& key, internalpb::BlobRecord record, rocksdb::WriteBatch* batch);
  // A blob's content (empty when the blob has none or does not exist).
  const std::string& Content(const BlobKey& key) const;
  // Replaces a blob's content, persisting it into `batch`. Call with the blob's record in place.
  void PutContent(const BlobKey& key, std::string content, rocksdb::WriteBatch* batch);
  // Removes the record (and, for a container, every blob in it), contents included.
  void Erase(const BlobKey& key, rocksdb::WriteBatch* batch);

  // A fresh revision for an ETag or fencing token: strictly increasing, persisted into `batch`.
  int64_t NextRevision(rocksdb::WriteBatch* batch);

  // The record whose lease `core_lease_id` times, if any.
  std::optional<BlobKey> OwnerOfCoreLease(int64_t core_lease_id) const;

  // Containers with names >= `from` (in name order) while `fn` returns true.
  void ForEachContainer(
      std::string_view from,
      const std::function<bool(const std::string&, const internalpb::BlobRecord&)>& fn) const;
  // Blobs of `container` with names >= `from`, in name order, while `fn` returns true.
  void ForEachBlob(
      const std::string& container, std::string_view from,
      const std::function<bool(std::string_view, const internalpb::BlobRecord&)>& fn) const;

  size_t blob_count() const { return blobs_.size(); }

 private:
  static std::string BlobMapKey(const BlobKey& key) { return key.container + '/' + key.blob; }
  void TrackCoreLease(const BlobKey& key, const internalpb::BlobRecord* old_record,
                      const internalpb::BlobRecord* new_record);

  std::map<std::string, internalpb::BlobRecord, std::less<>> containers_;
  // container + '/' + blob; container names never hold '/', so one container's blobs are
  // contiguous.
  std::map<std::string, internalpb::BlobRecord, std::less<>> blobs_;
  absl::flat_hash_map<std::string, std::string>
      contents_;  // same keys as blobs_; empty ones absent
  absl::flat_hash_map<int64_t, BlobKey> core_lease_owner_;
  int64_t revision_ = 0;
};

}  // namespace leasehold::storage
