#include "server/blob/blob_format.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace leasehold::server::blobfmt {
namespace {
constexpr char kRfc1123[] = "%a, %d %b %Y %H:%M:%S GMT";
}  // namespace

std::string HttpDate(int64_t unix_ms) {
  return absl::FormatTime(kRfc1123, absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::optional<int64_t> ParseHttpDate(std::string_view text) {
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(kRfc1123, std::string(text), absl::UTCTimeZone(), &t, &error))
    return std::nullopt;
  return absl::ToUnixSeconds(t);
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string ErrorXml(std::string_view code, std::string_view message, std::string_view request_id,
                     int64_t now_ms) {
  return absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>", XmlEscape(code),
      "</Code><Message>", XmlEscape(message), "\nRequestId:", std::string(request_id), "\nTime:",
      absl::FormatTime("%Y-%m-%dT%H:%M:%E7SZ", absl::FromUnixMillis(now_ms), absl::UTCTimeZone()),
      "</Message></Error>");
}

std::string LeaseStatus(const internalpb::BlobLease& lease) {
  const bool locked = lease.state() == internalpb::BlobLease::LEASED ||
                      lease.state() == internalpb::BlobLease::BREAKING;
  return locked ? "locked" : "unlocked";
}

std::string LeaseState(const internalpb::BlobLease& lease) {
  switch (lease.state()) {
    case internalpb::BlobLease::LEASED:
      return "leased";
    case internalpb::BlobLease::EXPIRED:
      return "expired";
    case internalpb::BlobLease::BREAKING:
      return "breaking";
    case internalpb::BlobLease::BROKEN:
      return "broken";
    default:
      return "available";
  }
}

std::string LeaseDuration(const internalpb::BlobLease& lease) {
  if (lease.state() != internalpb::BlobLease::LEASED) return "";
  return lease.duration_s() < 0 ? "infinite" : "fixed";
}

}  // namespace leasehold::server::blobfmt
