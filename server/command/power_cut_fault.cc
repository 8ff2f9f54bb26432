#include "server/command/power_cut_fault.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/observability/log.h"
#include "storage/backend/power_cut_file_system.h"

namespace leasehold::server {
namespace {

constexpr char kVariable[] = "LEASEHOLD_FAULT_POWER_CUT";

// The file system SIGUSR2 cuts, kept here so that it outlives the engine; the handler reads the
// atomic pointer only.
std::shared_ptr<storage::PowerCutFileSystem> signalled_file_system_owner;
std::atomic<storage::PowerCutFileSystem*> signalled_file_system{nullptr};

void CutOnSignal(int) {
  if (storage::PowerCutFileSystem* fs = signalled_file_system.load()) fs->RequestCut();
}

// One `name` or `name=value` part of the variable; false when unknown or malformed.
bool ParsePart(const std::string& part, storage::PowerCutFileSystem::Options* options,
               bool* on_signal) {
  const size_t equals = part.find('=');
  if (equals == std::string::npos) {
    *on_signal = part == "signal";
    return *on_signal;
  }
  const std::string name = part.substr(0, equals);
  const std::string number = part.substr(equals + 1);
  if (name == "op") return absl::SimpleAtoi(number, &options->cut_at_op) && options->cut_at_op > 0;
  if (name == "seed") return absl::SimpleAtoi(number, &options->seed);
  return false;
}

void ExitAtCut(const storage::PowerCutFileSystem::Cut& cut) {
  LogInfo("power cut (fault injection): unsynced writes dropped, exiting",
          {{"after-write-operations", std::to_string(cut.after_ops)},
           {"files-cut", std::to_string(cut.files)},
           {"bytes-lost", std::to_string(cut.bytes_lost)},
           {"unsynced-bytes-kept", std::to_string(cut.bytes_unsynced_kept)}});
  _exit(kPowerCutExitCode);
}

}  // namespace

absl::StatusOr<std::shared_ptr<rocksdb::FileSystem>> PowerCutFaultFromEnvironment() {
  const char* value = std::getenv(kVariable);
  if (value == nullptr || *value == '\0') return nullptr;
  storage::PowerCutFileSystem::Options options;
  options.on_cut = ExitAtCut;
  bool on_signal = false;
  std::stringstream parts(value);
  for (std::string part; std::getline(parts, part, ',');) {
    if (!ParsePart(part, &options, &on_signal)) {
      return absl::InvalidArgumentError(absl::StrCat(
          kVariable, "=", value, ": expected op=N, signal and seed=S, comma-separated"));
    }
  }
  if (options.cut_at_op == 0 && !on_signal) {
    return absl::InvalidArgumentError(
        absl::StrCat(kVariable, "=", value, ": needs op=N or signal"));
  }
  auto fs = std::make_shared<storage::PowerCutFileSystem>(rocksdb::FileSystem::Default(),
                                                          std::move(options));
  if (on_signal) {
    signalled_file_system_owner = fs;
    signalled_file_system.store(fs.get());
    struct sigaction action = {};
    action.sa_handler = CutOnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &action, nullptr);
  }
  LogInfo("power-cut fault injection armed", {{kVariable, value}});
  return fs;
}

}  // namespace leasehold::server
