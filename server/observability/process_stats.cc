#include "server/observability/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace leasehold::server {
namespace {

// The fields of /proc/self/stat after the command name (which may hold spaces), so that field N
// of proc(5) is fields[N - 3].
absl::StatusOr<std::vector<std::string>> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return absl::UnavailableError("cannot read /proc/self/stat");
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return absl::InternalError("unexpected /proc/self/stat");
  std::istringstream rest(line.substr(close + 1));
  return std::vector<std::string>(std::istream_iterator<std::string>(rest),
                                  std::istream_iterator<std::string>());
}

// The boot time, seconds since the epoch (/proc/stat's btime).
double BootTime() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime") {
      in >> value;
      return value;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

}  // namespace

absl::StatusOr<ProcessStats> ReadProcessStats() {
  auto fields = StatFields();
  if (!fields.ok()) return fields.status();
  if (fields->size() < 22) return absl::InternalError("unexpected /proc/self/stat");
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  auto field = [&](int n) { return std::stod((*fields)[static_cast<size_t>(n - 3)]); };
  ProcessStats stats;
  stats.cpu_seconds = (field(14) + field(15)) / ticks;  // utime, stime
  stats.start_time_seconds = BootTime() + field(22) / ticks;
  stats.virtual_bytes = field(23);
  stats.resident_bytes = field(24) * page;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++stats.open_fds;
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) stats.max_fds = static_cast<double>(limit.rlim_cur);
  if (getrlimit(RLIMIT_AS, &limit) == 0) {
    stats.virtual_max_bytes = limit.rlim_cur == RLIM_INFINITY ? 18446744073709551616.0
                                                              : static_cast<double>(limit.rlim_cur);
  }
  return stats;
}

}  // namespace leasehold::server
