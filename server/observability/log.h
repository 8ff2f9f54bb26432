// Structured logging: one JSON object per line on stderr, filtered by level.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace leasehold::server {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Returns false for an unknown level name ("debug", "info", "warn", "error").
bool SetLogLevel(std::string_view name);

// etcd's --log-outputs: "default" or "stderr", "stdout", or file paths (opened for appending,
// written line by line). Call once, before logging from several threads; InvalidArgument names a
// file that cannot be opened (logging stays on stderr then).
[[nodiscard]] absl::Status SetLogOutputs(const std::vector<std::string>& outputs);

using LogFields = std::vector<std::pair<std::string, std::string>>;
void Log(LogLevel level, std::string_view message, const LogFields& fields = {});
inline void LogInfo(std::string_view m, const LogFields& f = {}) { Log(LogLevel::kInfo, m, f); }
inline void LogWarn(std::string_view m, const LogFields& f = {}) { Log(LogLevel::kWarn, m, f); }
inline void LogError(std::string_view m, const LogFields& f = {}) { Log(LogLevel::kError, m, f); }

// A duration as etcd's logs show one (Go's time.Duration.String): "1.5ms", "250µs", "1m30s", "0s".
std::string GoDuration(absl::Duration d);

}  // namespace leasehold::server
