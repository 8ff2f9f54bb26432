#include "server/blob/guid.h"

#include <cctype>
#include <cstdio>
#include <random>

#include "absl/random/random.h"

namespace leasehold::server {

std::optional<std::string> CanonicalGuid(std::string_view text) {
  if (text.size() == 38 && ((text.front() == '{' && text.back() == '}') ||
                            (text.front() == '(' && text.back() == ')'))) {
    text = text.substr(1, 36);
  }
  std::string hex;
  if (text.size() == 36) {
    for (size_t i = 0; i < text.size(); ++i) {
      const bool dash_position = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash_position != (text[i] == '-')) return std::nullopt;
      if (!dash_position) hex.push_back(text[i]);
    }
  } else if (text.size() == 32) {
    hex = std::string(text);
  } else {
    return std::nullopt;
  }
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < hex.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(hex[i]);
    if (!std::isxdigit(c)) return std::nullopt;
    if (i == 8 || i == 12 || i == 16 || i == 20) out.push_back('-');
    out.push_back(static_cast<char>(std::tolower(c)));
  }
  return out;
}

std::string NewGuid() {
  thread_local absl::BitGen gen;
  const uint64_t hi = absl::Uniform<uint64_t>(gen);
  const uint64_t lo = absl::Uniform<uint64_t>(gen);
  char buf[37];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0x0fff),
                static_cast<unsigned>(0x8000 | (lo >> 48 & 0x3fff)),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

}  // namespace leasehold::server
