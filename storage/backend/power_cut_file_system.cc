#include "storage/backend/power_cut_file_system.h"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <utility>

namespace leasehold::storage {
namespace {

rocksdb::IOStatus PowerOff() { return rocksdb::IOStatus::IOError("power cut (fault injection)"); }

}  // namespace

// A file open for writing: every call is a counted operation; appends move its size, syncs what
// is durable. The size a sync makes durable is read before the sync starts, so an append racing
// with it is never counted as synced.
class PowerCutFileSystem::TrackedFile : public rocksdb::FSWritableFileWrapper {
 public:
  TrackedFile(std::unique_ptr<rocksdb::FSWritableFile> file, PowerCutFileSystem* fs,
              std::shared_ptr<FileState> state)
      : FSWritableFileWrapper(file.get()),
        file_(std::move(file)),
        fs_(fs),
        state_(std::move(state)) {}
  // After a cut the file beneath is never destroyed: closing it would write (RocksDB's POSIX file
  // sets the file's size to what it wrote when it closes), and a machine that is off closes
  // nothing. Only tests outlive a cut; a server exits at it.
  ~TrackedFile() override {
    if (fs_->cut()) (void)file_.release();
  }

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* debug) override {
    return fs_->Guarded([&] { return Appended(target()->Append(data, options, debug), data); });
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& verification,
                           rocksdb::IODebugContext* debug) override {
    return fs_->Guarded(
        [&] { return Appended(target()->Append(data, options, verification, debug), data); });
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     rocksdb::IODebugContext* debug) override {
    return fs_->Guarded([&] {
      return Placed(target()->PositionedAppend(data, offset, options, debug), offset, data);
    });
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     const rocksdb::DataVerificationInfo& verification,
                                     rocksdb::IODebugContext* debug) override {
    return fs_->Guarded([&] {
      return Placed(target()->PositionedAppend(data, offset, options, verification, debug), offset,
                    data);
    });
  }
  rocksdb::IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* debug) override {
    return fs_->Guarded([&] {
      rocksdb::IOStatus s = target()->Truncate(size, options, debug);
      if (s.ok()) {
        state_->written.store(size);
        if (state_->durable.load() > size) state_->durable.store(size);
      }
      return s;
    });
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options,
                         rocksdb::IODebugContext* debug) override {
    return fs_->Guarded([&] {
      const uint64_t upto = state_->written.load();
      return Synced(upto, target()->Sync(options, debug));
    });
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* debug) override {
    return fs_->Guarded([&] {
      const uint64_t upto = state_->written.load();
      return Synced(upto, target()->Fsync(options, debug));
    });
  }
  // sync_file_range: starts write-back, promises nothing.
  rocksdb::IOStatus RangeSync(uint64_t offset, uint64_t bytes, const rocksdb::IOOptions& options,
                              rocksdb::IODebugContext* debug) override {
    return fs_->Guarded([&] { return target()->RangeSync(offset, bytes, options, debug); });
  }
  rocksdb::IOStatus Close(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* debug) override {
    return fs_->Guarded([&] { return target()->Close(options, debug); });
  }

 private:
  rocksdb::IOStatus Appended(rocksdb::IOStatus s, const rocksdb::Slice& data) {
    if (s.ok()) state_->written.fetch_add(data.size());
    return s;
  }
  rocksdb::IOStatus Placed(rocksdb::IOStatus s, uint64_t offset, const rocksdb::Slice& data) {
    if (s.ok()) state_->written.store(std::max(state_->written.load(), offset + data.size()));
    return s;
  }
  rocksdb::IOStatus Synced(uint64_t upto, rocksdb::IOStatus s) {
    if (s.ok() && state_->durable.load() < upto) state_->durable.store(upto);
    return s;
  }

  std::unique_ptr<rocksdb::FSWritableFile> file_;
  PowerCutFileSystem* const fs_;
  const std::shared_ptr<FileState> state_;
};

PowerCutFileSystem::PowerCutFileSystem(const std::shared_ptr<rocksdb::FileSystem>& base,
                                       Options options)
    : FileSystemWrapper(base), options_(std::move(options)) {}

template <typename Op>
rocksdb::IOStatus PowerCutFileSystem::Guarded(Op&& op) {
  const uint64_t n = operations_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n == options_.cut_at_op || cut_requested_.load(std::memory_order_relaxed)) CutNow();
  absl::ReaderMutexLock lock(&io_mu_);
  if (cut_) return PowerOff();
  return op();
}

bool PowerCutFileSystem::cut() const {
  absl::ReaderMutexLock lock(&io_mu_);
  return cut_;
}

void PowerCutFileSystem::CutNow() {
  absl::WriterMutexLock lock(&io_mu_);
  if (cut_) return;
  cut_ = true;
  Cut summary;
  summary.after_ops = operations_.load();
  std::mt19937_64 rng(options_.seed ^ (summary.after_ops * 0x9e3779b97f4a7c15ULL));
  {
    absl::MutexLock files_lock(&files_mu_);
    for (const auto& [path, state] : files_) {
      const uint64_t written = state->written.load();
      const uint64_t durable = std::min(state->durable.load(), written);
      const uint64_t kept =
          written == durable ? written : durable + rng() % (written - durable + 1);
      // Also drops what a preallocation put past the written end.
      if (truncate(path.c_str(), static_cast<off_t>(kept)) != 0) continue;
      if (kept < written) {
        ++summary.files;
        summary.bytes_lost += written - kept;
      }
      summary.bytes_unsynced_kept += kept - durable;
    }
  }
  if (options_.on_cut) options_.on_cut(summary);
}

std::shared_ptr<PowerCutFileSystem::FileState> PowerCutFileSystem::Track(const std::string& path,
                                                                         uint64_t size) {
  auto state = std::make_shared<FileState>();
  state->written.store(size);
  state->durable.store(size);
  absl::MutexLock lock(&files_mu_);
  files_[path] = state;
  return state;
}

rocksdb::IOStatus PowerCutFileSystem::NewWritableFile(
    const std::string& path, const rocksdb::FileOptions& options,
    std::unique_ptr<rocksdb::FSWritableFile>* file, rocksdb::IODebugContext* debug) {
  return Guarded([&] {
    std::unique_ptr<rocksdb::FSWritableFile> opened;
    rocksdb::IOStatus s = target()->NewWritableFile(path, options, &opened, debug);
    if (s.ok()) *file = std::make_unique<TrackedFile>(std::move(opened), this, Track(path, 0));
    return s;
  });
}

rocksdb::IOStatus PowerCutFileSystem::ReopenWritableFile(
    const std::string& path, const rocksdb::FileOptions& options,
    std::unique_ptr<rocksdb::FSWritableFile>* file, rocksdb::IODebugContext* debug) {
  return Guarded([&] {
    // What the file held before is taken as durable.
    uint64_t size = 0;
    if (!target()->GetFileSize(path, rocksdb::IOOptions(), &size, debug).ok()) size = 0;
    std::unique_ptr<rocksdb::FSWritableFile> opened;
    rocksdb::IOStatus s = target()->ReopenWritableFile(path, options, &opened, debug);
    if (s.ok()) *file = std::make_unique<TrackedFile>(std::move(opened), this, Track(path, size));
    return s;
  });
}

rocksdb::IOStatus PowerCutFileSystem::RenameFile(const std::string& from, const std::string& to,
                                                 const rocksdb::IOOptions& options,
                                                 rocksdb::IODebugContext* debug) {
  return Guarded([&] {
    rocksdb::IOStatus s = target()->RenameFile(from, to, options, debug);
    if (s.ok()) {
      absl::MutexLock lock(&files_mu_);
      auto it = files_.find(from);
      if (it == files_.end()) {
        files_.erase(to);
      } else {
        files_[to] = it->second;
        files_.erase(it);
      }
    }
    return s;
  });
}

rocksdb::IOStatus PowerCutFileSystem::DeleteFile(const std::string& path,
                                                 const rocksdb::IOOptions& options,
                                                 rocksdb::IODebugContext* debug) {
  return Guarded([&] {
    rocksdb::IOStatus s = target()->DeleteFile(path, options, debug);
    if (s.ok()) {
      absl::MutexLock lock(&files_mu_);
      files_.erase(path);
    }
    return s;
  });
}

}  // namespace leasehold::storage
