#include "storage/backend/wal_file_system.h"

#include <string_view>
#include <utility>

namespace leasehold::storage {
namespace {

bool IsLog(std::string_view path) {
  return path.size() > 4 && path.substr(path.size() - 4) == ".log";
}

std::string FileName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

// Counts what RocksDB appends to one log; forgets it once closed (a closed log is trimmed to what
// it holds, so its size is right again).
class WalFileSystem::CountedLog : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  CountedLog(std::unique_ptr<rocksdb::FSWritableFile> file, WalFileSystem* owner, std::string name,
             std::shared_ptr<std::atomic<uint64_t>> written)
      : FSWritableFileOwnerWrapper(std::move(file)),
        owner_(owner),
        name_(std::move(name)),
        written_(std::move(written)) {}
  ~CountedLog() override { owner_->Forget(name_, written_); }

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* debug) override {
    rocksdb::IOStatus s = target()->Append(data, options, debug);
    if (s.ok()) written_->fetch_add(data.size(), std::memory_order_relaxed);
    return s;
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& verification,
                           rocksdb::IODebugContext* debug) override {
    rocksdb::IOStatus s = target()->Append(data, options, verification, debug);
    if (s.ok()) written_->fetch_add(data.size(), std::memory_order_relaxed);
    return s;
  }
  rocksdb::IOStatus Close(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* debug) override {
    rocksdb::IOStatus s = target()->Close(options, debug);
    owner_->Forget(name_, written_);
    return s;
  }

 private:
  WalFileSystem* const owner_;
  const std::string name_;
  const std::shared_ptr<std::atomic<uint64_t>> written_;
};

rocksdb::IOStatus WalFileSystem::NewWritableFile(const std::string& path,
                                                 const rocksdb::FileOptions& options,
                                                 std::unique_ptr<rocksdb::FSWritableFile>* file,
                                                 rocksdb::IODebugContext* debug) {
  if (!IsLog(path)) return target()->NewWritableFile(path, options, file, debug);
  rocksdb::FileOptions preallocated = options;
  preallocated.fallocate_with_keep_size = false;
  std::unique_ptr<rocksdb::FSWritableFile> log;
  rocksdb::IOStatus s = target()->NewWritableFile(path, preallocated, &log, debug);
  if (!s.ok()) return s;
  auto written = std::make_shared<std::atomic<uint64_t>>(0);
  std::string name = FileName(path);
  {
    absl::MutexLock lock(&mu_);
    open_logs_[name] = written;
  }
  *file = std::make_unique<CountedLog>(std::move(log), this, std::move(name), std::move(written));
  return s;
}

std::optional<uint64_t> WalFileSystem::OpenLogBytes(const std::string& file_name) const {
  absl::MutexLock lock(&mu_);
  auto it = open_logs_.find(file_name);
  if (it == open_logs_.end()) return std::nullopt;
  return it->second->load(std::memory_order_relaxed);
}

void WalFileSystem::Forget(const std::string& file_name,
                           const std::shared_ptr<std::atomic<uint64_t>>& counter) {
  absl::MutexLock lock(&mu_);
  // A newer file of the same name (RocksDB does not reuse log numbers, but be exact) stays.
  if (auto it = open_logs_.find(file_name); it != open_logs_.end() && it->second == counter)
    open_logs_.erase(it);
}

}  // namespace leasehold::storage
