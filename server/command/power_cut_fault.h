// The power-cut fault of the fault tests: with LEASEHOLD_FAULT_POWER_CUT set, the member's
// RocksDB files go through a PowerCutFileSystem, and when the power goes the member cuts its files
// (what was never synced is lost, torn at a random byte) and exits at once with
// kPowerCutExitCode, as a machine that lost power stops. Its value is a comma-separated list:
//   op=N      cut at the N-th write operation since the start (crash-restart tests)
//   signal    cut at the first write operation after SIGUSR2 (the fault campaign's nemesis)
//   seed=S    how much of each unsynced tail survives (default 1)
// Unset, nothing changes. Like etcd's failpoints, for tests only.
#pragma once

#include <memory>

#include "absl/status/statusor.h"

namespace rocksdb {
class FileSystem;
}  // namespace rocksdb

namespace leasehold::server {

inline constexpr int kPowerCutExitCode = 86;

// The file system to open the engine on: null when the variable is unset; InvalidArgument when it
// does not parse. With `signal`, installs the SIGUSR2 handler.
[[nodiscard]] absl::StatusOr<std::shared_ptr<rocksdb::FileSystem>> PowerCutFaultFromEnvironment();

}  // namespace leasehold::server
