#include "server/observability/log.h"

#include <atomic>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace leasehold::server {
namespace {

std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};
// Set once at start (SetLogOutputs); stderr until then.
std::vector<FILE*>& Outputs() {
  static auto* outputs = new std::vector<FILE*>{stderr};
  return *outputs;
}
constexpr const char* kNames[] = {"debug", "info", "warn", "error"};

// The body of a JSON string: quotes, backslashes and control characters escaped, every other byte
// as it is (UTF-8 passes through).
std::string JsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

}  // namespace

std::string GoDuration(absl::Duration d) {
  const int64_t ns = absl::ToInt64Nanoseconds(d);
  if (ns == 0) return "0s";
  const uint64_t u = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  // `whole` and `frac_digits` digits of fraction, trailing zeros dropped, as Go prints them.
  auto decimal = [](uint64_t value, int frac_digits) {
    uint64_t scale = 1;
    for (int i = 0; i < frac_digits; ++i) scale *= 10;
    std::string out = std::to_string(value / scale);
    if (uint64_t frac = value % scale; frac != 0) {
      std::string digits = absl::StrFormat("%0*d", frac_digits, frac);
      digits.erase(digits.find_last_not_of('0') + 1);
      out += "." + digits;
    }
    return out;
  };
  std::string out = ns < 0 ? "-" : "";
  if (u < 1'000) return out + std::to_string(u) + "ns";
  if (u < 1'000'000) return out + decimal(u, 3) + "\u00b5s";
  if (u < 1'000'000'000) return out + decimal(u, 6) + "ms";
  const uint64_t seconds = u / 1'000'000'000;
  const std::string s = decimal(u % 60'000'000'000, 9) + "s";
  if (seconds < 60) return out + s;
  if (seconds < 3600) return out + std::to_string(seconds / 60) + "m" + s;
  return out + std::to_string(seconds / 3600) + "h" + std::to_string(seconds / 60 % 60) + "m" + s;
}

bool SetLogLevel(std::string_view name) {
  for (int i = 0; i < 4; ++i) {
    if (name == kNames[i]) {
      min_level = i;
      return true;
    }
  }
  return false;
}

absl::Status SetLogOutputs(const std::vector<std::string>& outputs) {
  std::vector<FILE*> files;
  for (const std::string& output : outputs) {
    if (output == "default" || output == "stderr") {
      files.push_back(stderr);
    } else if (output == "stdout") {
      files.push_back(stdout);
    } else {
      FILE* file = std::fopen(output.c_str(), "a");
      if (file == nullptr)
        return absl::InvalidArgumentError("cannot open log output '" + output + "'");
      std::setvbuf(file, nullptr, _IOLBF, 0);  // whole lines, at once
      files.push_back(file);
    }
  }
  if (!files.empty()) Outputs() = std::move(files);
  return absl::OkStatus();
}

void Log(LogLevel level, std::string_view message, const LogFields& fields) {
  if (static_cast<int>(level) < min_level.load(std::memory_order_relaxed)) return;
  std::string line = "{\"level\":\"";
  line += kNames[static_cast<int>(level)];
  line +=
      "\",\"ts\":\"" + absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  line += "\",\"msg\":\"" + JsonEscape(message) + "\"";
  for (const auto& [key, value] : fields) line += ",\"" + key + "\":\"" + JsonEscape(value) + "\"";
  line += "}\n";
  for (FILE* out : Outputs()) {
    std::fwrite(line.data(), 1, line.size(), out);
    if (out == stdout) std::fflush(out);
  }
}

}  // namespace leasehold::server
