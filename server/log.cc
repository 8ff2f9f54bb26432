#include "server/log.h"

#include <atomic>
#include <cstdio>

#include "absl/strings/escaping.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace leasehold::server {
namespace {

std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};
constexpr const char* kNames[] = {"debug", "info", "warn", "error"};

}  // namespace

bool SetLogLevel(std::string_view name) {
  for (int i = 0; i < 4; ++i) {
    if (name == kNames[i]) {
      min_level = i;
      return true;
    }
  }
  return false;
}

void Log(LogLevel level, std::string_view message, const LogFields& fields) {
  if (static_cast<int>(level) < min_level.load(std::memory_order_relaxed)) return;
  std::string line = "{\"level\":\"";
  line += kNames[static_cast<int>(level)];
  line += "\",\"ts\":\"" + absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  line += "\",\"msg\":\"" + absl::CEscape(std::string(message)) + "\"";
  for (const auto& [key, value] : fields) line += ",\"" + key + "\":\"" + absl::CEscape(value) + "\"";
  line += "}\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace leasehold::server
