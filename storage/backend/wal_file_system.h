// WalFileSystem: the RocksDB file system Leasehold's engine runs on. It changes one thing about
// write-ahead logs (*.log): RocksDB preallocates them in large steps, and here the preallocation
// sets the file's size too. By default the size follows what was written, so each synced write
// also changes the size and fdatasync must write that metadata as well; with the size set in
// advance a sync flushes data only, which on this project's disks made a synced write about a
// third cheaper. RocksDB trims the preallocated tail when it closes a log, and its log reader stops
// at the zeros after a crash.
//
// A preallocated log's size no longer says how much it holds, so the file system counts the bytes
// written to each log it has open (OpenLogBytes), for the engine's size estimate.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/file_system.h"

namespace leasehold::storage {

class WalFileSystem : public rocksdb::FileSystemWrapper {
 public:
  explicit WalFileSystem(const std::shared_ptr<rocksdb::FileSystem>& base)
      : FileSystemWrapper(base) {}
  const char* Name() const override { return "LeaseholdWalFileSystem"; }

  rocksdb::IOStatus NewWritableFile(const std::string& path, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* file,
                                    rocksdb::IODebugContext* debug) override;

  // Bytes written so far to the log named `file_name` (no directory), if it is open for writing.
  // One instance serves one database, whose logs are all in one directory.
  std::optional<uint64_t> OpenLogBytes(const std::string& file_name) const;

 private:
  class CountedLog;
  void Forget(const std::string& file_name, const std::shared_ptr<std::atomic<uint64_t>>& counter);

  mutable absl::Mutex mu_;
  // By file name.
  std::map<std::string, std::shared_ptr<std::atomic<uint64_t>>> open_logs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasehold::storage
