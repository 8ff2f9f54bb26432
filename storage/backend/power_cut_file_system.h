// PowerCutFileSystem: a RocksDB file system that can lose power. It passes every call through to
// the file system beneath, and remembers, for each file written through it, how many bytes were
// appended and how many of those a sync has made durable. A power cut then does to the files what
// losing the page cache would: each keeps what was synced plus a random prefix of what was written
// after (torn at any byte), and everything else is gone. From the cut on, every write, sync,
// rename or deletion fails without touching the disk, as on a machine that is off.
//
// A cut comes at a chosen write operation (the n-th append, sync, truncate, close, creation,
// rename or deletion since the file system was made), or at the first one after RequestCut(),
// which is safe to call from a signal handler. Operations in progress finish first, so the cut
// falls between two of them. The callback runs after the files are cut; a server exits there.
//
// Not modelled: directory entries (a file created, renamed or deleted stays so, as RocksDB syncs
// the directory after each of these), and pages written back out of order (the kept part of an
// unsynced tail is always a prefix). Files RocksDB opens for random writes are not tracked; its
// options here never use them.
//
// For fault injection only (tests, and the server under LEASEHOLD_FAULT_POWER_CUT). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/file_system.h"

namespace leasehold::storage {

class PowerCutFileSystem : public rocksdb::FileSystemWrapper {
 public:
  struct Cut {
    uint64_t after_ops = 0;   // the operation the cut came at
    int files = 0;            // files that lost something
    uint64_t bytes_lost = 0;  // bytes written but not kept
    uint64_t bytes_unsynced_kept = 0;
  };
  struct Options {
    // Cut at this write operation (1 = the first); 0: only when requested.
    uint64_t cut_at_op = 0;
    // Chooses how much of each unsynced tail survives.
    uint64_t seed = 1;
    // Runs once the files are cut (with the file system's lock held: it must not use it).
    std::function<void(const Cut&)> on_cut;
  };

  PowerCutFileSystem(const std::shared_ptr<rocksdb::FileSystem>& base, Options options);
  const char* Name() const override { return "LeaseholdPowerCutFileSystem"; }

  // Cuts power at the next write operation. Async-signal-safe.
  void RequestCut() { cut_requested_.store(true, std::memory_order_relaxed); }
  // Cuts power now, waiting for operations in progress.
  void CutNow();
  bool cut() const;
  // Write operations seen so far.
  uint64_t operations() const { return operations_.load(std::memory_order_relaxed); }

  rocksdb::IOStatus NewWritableFile(const std::string& path, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* file,
                                    rocksdb::IODebugContext* debug) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& path, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* file,
                                       rocksdb::IODebugContext* debug) override;
  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to,
                               const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* debug) override;
  rocksdb::IOStatus DeleteFile(const std::string& path, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* debug) override;

 private:
  class TrackedFile;
  // What one file holds: bytes appended (its logical size) and how many of them are durable.
  struct FileState {
    std::atomic<uint64_t> written{0};
    std::atomic<uint64_t> durable{0};
  };

  // Counts a write operation and cuts power first when it is the one; then runs `op` unless the
  // power is off.
  template <typename Op>
  rocksdb::IOStatus Guarded(Op&& op);
  std::shared_ptr<FileState> Track(const std::string& path, uint64_t size);

  const Options options_;
  std::atomic<uint64_t> operations_{0};
  std::atomic<bool> cut_requested_{false};
  // Held shared by each operation and exclusively by the cut, so the cut sees no half-done one.
  mutable absl::Mutex io_mu_;
  bool cut_ ABSL_GUARDED_BY(io_mu_) = false;
  absl::Mutex files_mu_ ABSL_ACQUIRED_AFTER(io_mu_);
  std::map<std::string, std::shared_ptr<FileState>> files_ ABSL_GUARDED_BY(files_mu_);
};

}  // namespace leasehold::storage
