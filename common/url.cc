#include "common/url.h"

#include <string_view>

#include "absl/strings/numbers.h"

namespace leasehold {

absl::StatusOr<std::string> HostPortOfUrl(const std::string& url) {
  size_t scheme_end = 0;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (url.rfind(scheme, 0) == 0) scheme_end = scheme.size();
  }
  if (scheme_end == 0)
    return absl::InvalidArgumentError("unsupported URL '" + url + "': use http:// or https://");
  std::string rest = url.substr(scheme_end);
  if (auto slash = rest.find('/'); slash != std::string::npos) rest = rest.substr(0, slash);
  auto colon = rest.rfind(':');
  int port;
  if (colon == std::string::npos || !absl::SimpleAtoi(rest.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError("URL '" + url + "' has no valid port");
  }
  return rest;
}

bool IsUnixUrl(const std::string& url) {
  return url.rfind("unix://", 0) == 0 || url.rfind("unixs://", 0) == 0;
}

absl::StatusOr<std::string> GrpcAddressOfUrl(const std::string& url) {
  if (!IsUnixUrl(url)) return HostPortOfUrl(url);
  const std::string path = url.substr(url.find("://") + 3);
  if (path.empty()) return absl::InvalidArgumentError("URL '" + url + "' names no socket");
  return "unix:" + path;
}

}  // namespace leasehold
