#include "server/command/backup_command.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "storage/backup/backup.h"

namespace leasehold::server {
namespace {

constexpr const char* kUsage =
    "usage: leasehold snapshot status FILE\n"
    "       leasehold snapshot restore FILE --data-dir DIR [--wal-dir WAL_DIR]\n"
    "\n"
    "restore seeds a new data dir with FILE's keys, revisions, leases and blob records; start "
    "each\n"
    "member of the new cluster on its own restored dir with --initial-cluster-state=new (and the\n"
    "same --wal-dir, when one was given here).\n";

int Usage(const std::string& problem) {
  std::cerr << "leasehold snapshot: " << problem << "\n\n" << kUsage;
  return 2;
}

void PrintSummary(const storage::BackupSummary& summary) {
  std::printf("+----------+----------+------------+------------+\n");
  std::printf("|   HASH   | REVISION | TOTAL KEYS | TOTAL SIZE |\n");
  std::printf("+----------+----------+------------+------------+\n");
  std::printf("| %8s | %8lld | %10llu | %10s |\n", summary.sha256_hex.substr(0, 8).c_str(),
              static_cast<long long>(summary.revision),
              static_cast<unsigned long long>(summary.keys),
              (std::to_string(summary.bytes / 1024) + " kB").c_str());
  std::printf("+----------+----------+------------+------------+\n");
}

}  // namespace

int RunSnapshotCommand(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return Usage("missing sub-command");
  if (args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return 0;
  }
  const std::string command = args[0];
  std::string file, data_dir, wal_dir;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--data-dir=", 0) == 0) {
      data_dir = arg.substr(11);
    } else if (arg == "--data-dir" && i + 1 < args.size()) {
      data_dir = args[++i];
    } else if (arg.rfind("--wal-dir=", 0) == 0) {
      wal_dir = arg.substr(10);
    } else if (arg == "--wal-dir" && i + 1 < args.size()) {
      wal_dir = args[++i];
    } else if (!arg.empty() && arg[0] != '-' && file.empty()) {
      file = arg;
    } else {
      return Usage("unexpected argument '" + arg + "'");
    }
  }
  if (file.empty()) return Usage("missing FILE");
  if (command == "status") {
    if (!data_dir.empty() || !wal_dir.empty())
      return Usage("status takes no --data-dir or --wal-dir");
    auto summary = storage::InspectBackup(file);
    if (!summary.ok()) {
      std::cerr << "Error: " << summary.status().message() << "\n";
      return 1;
    }
    PrintSummary(*summary);
    return 0;
  }
  if (command != "restore") return Usage("unknown sub-command '" + command + "'");
  if (data_dir.empty()) return Usage("restore needs --data-dir");
  std::error_code ec;
  if (std::filesystem::exists(data_dir, ec)) {
    std::cerr << "Error: data-dir \"" << data_dir << "\" exists\n";
    return 1;
  }
  if (!wal_dir.empty() && std::filesystem::exists(wal_dir, ec) &&
      !std::filesystem::is_empty(wal_dir, ec)) {
    std::cerr << "Error: wal-dir \"" << wal_dir << "\" is not empty\n";
    return 1;
  }
  auto engine = storage::Engine::Open(data_dir, wal_dir);
  absl::StatusOr<storage::BackupSummary> summary =
      engine.ok() ? storage::RestoreBackup(file, engine->get()) : engine.status();
  if (!summary.ok()) {
    // A bad file leaves no half-made data dir behind: close the database, then remove it.
    engine = absl::UnknownError("closed");
    std::filesystem::remove_all(data_dir, ec);
    if (!wal_dir.empty()) std::filesystem::remove_all(wal_dir, ec);
    std::cerr << "Error: " << summary.status().message() << "\n";
    return 1;
  }
  std::printf("restored snapshot %s (revision %lld, %llu keys, %llu leases) to %s\n",
              summary->sha256_hex.substr(0, 8).c_str(), static_cast<long long>(summary->revision),
              static_cast<unsigned long long>(summary->keys),
              static_cast<unsigned long long>(summary->leases), data_dir.c_str());
  return 0;
}

}  // namespace leasehold::server
