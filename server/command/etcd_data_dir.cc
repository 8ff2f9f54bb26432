#include "server/command/etcd_data_dir.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "common/status_macros.h"
#include "server/observability/log.h"
#include "storage/backend/engine.h"
#include "storage/backup/backup.h"

namespace leasehold::server {
namespace {

namespace fs = std::filesystem;

constexpr const char* kImportFolder = "leasehold-import";  // the database while it is being made
constexpr const char* kImportedEtcdFolder = "member.etcd-imported";

absl::Status FileSystemError(const std::string& what, const std::error_code& ec) {
  return absl::InternalError(what + ": " + ec.message());
}

// Moves the database files made in `from` up into `to`, RocksDB's CURRENT last: until CURRENT is
// there, `to` holds no database and the import runs again from the start.
absl::Status MoveDatabaseUp(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(from, ec)) entries.push_back(entry.path());
  if (ec) return FileSystemError("cannot list " + from.string(), ec);
  std::stable_partition(entries.begin(), entries.end(),
                        [](const fs::path& p) { return p.filename() != "CURRENT"; });
  for (const fs::path& entry : entries) {
    fs::rename(entry, to / entry.filename(), ec);
    if (ec) return FileSystemError("cannot move " + entry.string(), ec);
  }
  fs::remove(from, ec);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> ImportEtcdDataDir(const std::string& data_dir, const std::string& wal_dir) {
  const fs::path dir(data_dir);
  const fs::path backend = dir / "member" / "snap" / "db";
  std::error_code ec;
  if (fs::exists(dir / "CURRENT", ec) || !fs::exists(backend, ec)) return false;
  const fs::path staging = dir / kImportFolder;
  fs::remove_all(staging, ec);  // what a crash during an earlier import left
  absl::StatusOr<storage::BackupSummary> summary;
  {
    ASSIGN_OR_RETURN(std::unique_ptr<storage::Engine> engine,
                     storage::Engine::Open(staging.string(), wal_dir));
    summary = storage::RestoreBackup(backend.string(), engine.get());
  }  // closed before its files move
  if (!summary.ok()) {
    fs::remove_all(staging, ec);
    return WithContext("cannot import the etcd data dir's backend " + backend.string(),
                       summary.status());
  }
  RETURN_IF_ERROR(MoveDatabaseUp(staging, dir));
  fs::rename(dir / "member", dir / kImportedEtcdFolder, ec);
  if (ec) return FileSystemError("cannot rename etcd's member folder", ec);
  LogInfo(
      "imported etcd's data dir: its backend's keys, leases and users are this member's; etcd's "
      "WAL is not read, so a dir whose etcd did not stop cleanly may lack its last writes",
      {{"data-dir", data_dir},
       {"etcd-member-folder", (dir / kImportedEtcdFolder).string()},
       {"revision", std::to_string(summary->revision)},
       {"keys", std::to_string(summary->keys)},
       {"leases", std::to_string(summary->leases)}});
  return true;
}

}  // namespace leasehold::server
