#include "server/tls/peer_address_check.h"

#include <arpa/inet.h>

#include <algorithm>
#include <vector>

#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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
  std::vector<std::string> ips;
  bool has_dns = false;
  std::unique_ptr<GENERAL_NAMES, void (*)(GENERAL_NAMES*)> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)),
      [](GENERAL_NAMES* n) { GENERAL_NAMES_free(n); });
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type == GEN_DNS) {
      has_dns = true;
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* s = name->d.iPAddress;
      const int length = ASN1_STRING_length(s);
      if (length != 4 && length != 16)
        return absl::PermissionDeniedError("x509: certificate has a malformed IP name");
      char text[INET6_ADDRSTRLEN] = {};
      if (inet_ntop(length == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(s), text,
                    sizeof text) != nullptr) {
        ips.emplace_back(text);
      }
    }
  }
  if (ips.empty() || has_dns) return absl::OkStatus();
  const std::string caller = Canonical(ip);
  for (const std::string& named : ips) {
    if (Canonical(named) == caller) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("x509: certificate is valid for ", absl::StrJoin(ips, ", "), ", not ", ip));
}

}  // namespace leasehold::server
