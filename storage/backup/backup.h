// Backups: a member's replicated state as one portable file (what `etcdctl snapshot save` receives
// from Maintenance.Snapshot), and a fresh data directory seeded from such a file.
//
// File format: a bbolt database (see bolt_file.h) followed by its SHA-256 (32 bytes), as etcd's
// snapshots are, so `etcdctl snapshot status` reads it and `etcdctl snapshot restore` seeds an
// etcd member from it. Buckets: etcd's "key" (every version, in etcd's revision encoding), "lease"
// and "meta", which is what etcd's restore reads; and "leasehold", every other replicated record
// (leases as Leasehold keeps them, auth, blob leases, the revision) for Leasehold's own restore.
// Files from before this format (magic line "LEASEHOLD-BACKUP 1\n", framed records, 512-byte
// padding, digest) are still read, and so is etcd's own backend: a snapshot saved from etcd 3.x,
// or the member/snap/db of an etcd data dir (no digest), read as etcd_backend.h says.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "storage/backend/engine.h"

namespace leasehold::storage {

// Produces a backup file piece by piece from one consistent view of `engine`, taken at
// construction, so writes that land while it streams are not in it. The file is laid out in memory
// at construction (a bbolt file's meta page names its root, which comes last). Not thread-safe.
class BackupWriter {
 public:
  explicit BackupWriter(const Engine& engine);
  ~BackupWriter();

  uint64_t total_bytes() const { return total_bytes_; }
  uint64_t written_bytes() const { return written_bytes_; }
  // Replaces `out` with the next piece of about `chunk_bytes` (never empty while bytes remain).
  // Returns false once the whole file, digest included, has been produced; DataLoss if the engine
  // fails to read.
  [[nodiscard]] absl::StatusOr<bool> Next(size_t chunk_bytes, std::string* out);

 private:
  std::string file_;
  absl::Status error_;  // DataLoss when the view could not be read
  uint64_t total_bytes_ = 0;
  uint64_t written_bytes_ = 0;
};

struct BackupSummary {
  std::string sha256_hex;
  int64_t revision = 0;
  uint64_t keys = 0;  // live keys at `revision`
  uint64_t leases = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;
};

// Reads and checks the backup (or etcd snapshot) at `path` (magic, framing, digest) without
// changing anything.
[[nodiscard]] absl::StatusOr<BackupSummary> InspectBackup(const std::string& path);

// Seeds `engine`, which must be freshly created, from the backup (or etcd snapshot) at `path`: its
// keys, revisions, leases, auth state and blob records. Membership, the Raft log and the applied
// index are left out, so the member founds a new cluster from its own --initial-cluster on first
// start, as after etcd's `snapshot restore`; leases lose their deadlines and run for their full TTL
// (or etcd's checkpointed remaining TTL) from the moment a leader of the new cluster takes over.
// Checks everything before writing anything.
[[nodiscard]] absl::StatusOr<BackupSummary> RestoreBackup(const std::string& path, Engine* engine);

}  // namespace leasehold::storage
