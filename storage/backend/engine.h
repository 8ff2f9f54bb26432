// The storage engine: one RocksDB database holding every persisted record of a member, with the
// key layout in one place. Thread-safe (RocksDB is); callers serialise logical updates themselves.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "storage/backend/revision.h"

namespace leasehold::storage {

// Key layout (single column family, one-byte prefixes so related records sort together):
//   'k' + revision(16B)   -> 1 flag byte ('p' put, 't' tombstone) + mvccpb.KeyValue
//   'l' + lease id(8B BE) -> internalpb.LeaseRecord
//   'w' + index(8B BE)    -> raftpb.Entry, the Raft log (compacted below the latest snapshot)
//   'm' + name            -> metadata (format marker, consistent index, revisions, identity)
namespace keys {
std::string Revision(const storage::Revision& rev);
std::string Lease(int64_t id);
std::string LogEntry(uint64_t index);
std::string Meta(std::string_view name);
// Records that belong to this member alone (its identity, its Raft log and hard state) and never
// travel in a snapshot or a backup.
bool IsMemberLocal(std::string_view key);
inline constexpr char kRevisionPrefix = 'k';
inline constexpr char kLeasePrefix = 'l';
inline constexpr char kLogPrefix = 'w';
}  // namespace keys

class WalFileSystem;
}  // namespace leasehold::storage
namespace rocksdb {
class FileSystem;
}  // namespace rocksdb
namespace leasehold::storage {

class Engine {
 public:
  // Opens the database in `dir`, creating it if absent (with any missing parents, each owner-only).
  // Its write-ahead log goes to `wal_dir` when one is given (etcd's --wal-dir: a disk of its own
  // for the synced writes), made the same way; a new data dir records where its log is. Fails with
  // FailedPrecondition when the folder holds something that is not a Leasehold database or cannot
  // be created, or when it was made with another log folder (opened without its log, a database
  // would lose its latest writes), and DataLoss when RocksDB reports corruption. RocksDB's files
  // go through `file_system` (null: the operating system's), which fault injection replaces.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Engine>> Open(
      const std::string& dir, const std::string& wal_dir = "",
      std::shared_ptr<rocksdb::FileSystem> file_system = nullptr);

  [[nodiscard]] absl::Status Write(rocksdb::WriteBatch* batch, bool sync);
  // NotFound when absent.
  [[nodiscard]] absl::StatusOr<std::string> Get(std::string_view key) const;
  std::unique_ptr<rocksdb::Iterator> NewIterator() const;
  // An iterator that stops before `upper_bound`. Scans that end inside a key range must use it:
  // without a bound, stepping past the range's last key makes RocksDB skip every deleted key that
  // follows (revoked leases, compacted log entries) to find the next live one.
  std::unique_ptr<rocksdb::Iterator> NewIterator(std::string_view upper_bound) const;
  // A consistent read view, released when the last copy goes: iterators made with it all see the
  // database as it was when it was pinned.
  std::shared_ptr<const rocksdb::Snapshot> Pin() const;
  // How many pinned views are held now.
  int64_t PinnedViews() const;
  std::unique_ptr<rocksdb::Iterator> NewIterator(const rocksdb::Snapshot* view) const;
  // Compacts the whole key space, dropping deleted and overwritten versions from disk (etcd's
  // defragment). Blocks until done.
  [[nodiscard]] absl::Status CompactAll();
  // Approximate bytes on disk (SST files plus WAL).
  int64_t ApproximateSize() const;
  // Approximate bytes of data in use: RocksDB's estimate of the live data in its SST files (without
  // overwritten or deleted versions) plus the write-ahead log, which holds what is not in them yet.
  // At most ApproximateSize(); roughly what a compaction of the whole key space (CompactAll)
  // leaves.
  int64_t ApproximateLiveSize() const;

  [[nodiscard]] absl::StatusOr<uint64_t> GetMetaU64(std::string_view name) const;  // 0 when absent
  static void PutMetaU64(rocksdb::WriteBatch* batch, std::string_view name, uint64_t value);

 private:
  // Bytes the write-ahead logs hold.
  uint64_t LogBytes() const;
  Engine(std::shared_ptr<WalFileSystem> file_system, std::unique_ptr<rocksdb::Env> env,
         std::unique_ptr<rocksdb::DB> db, std::string log_dir)
      : file_system_(std::move(file_system)),
        env_(std::move(env)),
        db_(std::move(db)),
        log_dir_(std::move(log_dir)) {}
  // The database goes first: it uses both.
  std::shared_ptr<WalFileSystem> file_system_;
  std::unique_ptr<rocksdb::Env> env_;
  std::unique_ptr<rocksdb::DB> db_;
  std::string log_dir_;  // where the write-ahead logs are
};

// Big-endian encoding keeps numeric order equal to byte order.
void AppendBigEndian64(std::string* out, uint64_t v);
uint64_t ReadBigEndian64(std::string_view in);

}  // namespace leasehold::storage
