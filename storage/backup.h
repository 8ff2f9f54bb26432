// Backups: a member's replicated state as one portable file (what `etcdctl snapshot save` receives
// from Maintenance.Snapshot), and a fresh data directory seeded from such a file.
//
// File format: the magic line "LEASEHOLD-BACKUP 1\n"; then every replicated record as
// [u32 big-endian key length][key][u32 big-endian value length][value], in key order; then a zero
// key length that ends the records, and zero bytes up to a multiple of 512; then the SHA-256 of
// everything before it (32 bytes). The digest and the size (512n + 32) are what `etcdctl snapshot
// save` checks before it keeps a file, as etcd's own snapshots are whole 512-byte pages plus digest.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rocksdb/iterator.h"
#include "storage/engine.h"

namespace leasehold::storage {

// Produces a backup file piece by piece from one consistent view of `engine`, pinned at
// construction, so writes that land while it streams are not in it. Not thread-safe.
class BackupWriter {
 public:
  // Scans the view once to learn the exact file size.
  explicit BackupWriter(const Engine& engine);
  ~BackupWriter();

  uint64_t total_bytes() const { return total_bytes_; }
  uint64_t written_bytes() const { return written_bytes_; }
  // Replaces `out` with the next piece of about `chunk_bytes` (never empty while bytes remain).
  // Returns false once the whole file, digest included, has been produced; DataLoss if the engine
  // fails to read.
  absl::StatusOr<bool> Next(size_t chunk_bytes, std::string* out);

 private:
  struct Digest;
  const Engine& engine_;
  std::shared_ptr<const rocksdb::Snapshot> view_;
  std::unique_ptr<rocksdb::Iterator> it_;
  std::unique_ptr<Digest> digest_;
  uint64_t total_bytes_ = 0;
  uint64_t written_bytes_ = 0;
  bool started_ = false;
  bool finished_ = false;
};

struct BackupSummary {
  std::string sha256_hex;
  int64_t revision = 0;
  uint64_t keys = 0;    // live keys at `revision`
  uint64_t leases = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;
};

// Reads and checks the backup at `path` (magic, framing, digest) without changing anything.
absl::StatusOr<BackupSummary> InspectBackup(const std::string& path);

// Seeds `engine`, which must be freshly created, from the backup at `path`: its keys, revisions,
// leases and blob records. Membership, the Raft log and the applied index are left out, so the
// member founds a new cluster from its own --initial-cluster on first start, as after etcd's
// `snapshot restore`; leases lose their deadlines and run for their full TTL from the moment a
// leader of the new cluster takes over. Checks everything before writing anything.
absl::StatusOr<BackupSummary> RestoreBackup(const std::string& path, Engine* engine);

}  // namespace leasehold::storage
