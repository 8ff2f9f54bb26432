#include "server/tls/peer_address_check.h"

#include <arpa/inet.h>

#include <algorithm>
#include <vector>

#include <openssl/x509.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/tls/certificate_rules.h"

namespace leasehold::server {
namespace {

// The same address, whatever its spelling ("::ffff:10.0.0.1" is 10.0.0.1).
std::string Canonical(const std::string& ip) {
  unsigned char raw[16];
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_pton(AF_INET, ip.c_str(), raw) == 1) return ip;
  if (inet_pton(AF_INET6, ip.c_str(), raw) != 1) return ip;
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(raw, raw + 12, kMapped))
    return inet_ntop(AF_INET, raw + 12, text, sizeof text) ? text : ip;
  return inet_ntop(AF_INET6, raw, text, sizeof text) ? text : ip;
}

}  // namespace

absl::Status CheckCertificateAddress(X509* cert, const std::string& ip) {
  const AltNames names = AltNamesOf(cert);
  if (names.malformed_ip)
    return absl::PermissionDeniedError("x509: certificate has a malformed IP name");
  const std::vector<std::string>& ips = names.ips;
  const bool has_dns = !names.dns.empty();
  if (ips.empty() || has_dns) return absl::OkStatus();
  const std::string caller = Canonical(ip);
  for (const std::string& named : ips) {
    if (Canonical(named) == caller) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("x509: certificate is valid for ", absl::StrJoin(ips, ", "), ", not ", ip));
}

}  // namespace leasehold::server
