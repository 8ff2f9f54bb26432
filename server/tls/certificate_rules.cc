#include "server/tls/certificate_rules.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>

#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/observability/log.h"
#include "server/tls/openssl_ptr.h"

namespace leasehold::server {
namespace {

using Crl = OpenSslPtr<X509_CRL, X509_CRL_free>;
using Bio = OpenSslPtr<BIO, BIO_free>;

// A revocation list in PEM or DER, as etcd reads one (PEM when it starts as one).
absl::StatusOr<Crl> ReadCrl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::InvalidArgumentError("cannot read the certificate revocation list '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Bio bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
  if (bio == nullptr)
    return absl::ResourceExhaustedError("out of memory reading a revocation list");
  Crl crl(bytes.rfind("-----BEGIN X509 CRL", 0) == 0
              ? PEM_read_bio_X509_CRL(bio.get(), nullptr, nullptr, nullptr)
              : d2i_X509_CRL_bio(bio.get(), nullptr));
  if (crl == nullptr) {
    return absl::InvalidArgumentError("'" + path +
                                      "' is not a certificate revocation list (PEM or DER)");
  }
  return crl;
}

// Go's %x of a serial's magnitude: lower-case hex, two digits a byte, no leading zero bytes.
std::string SerialHex(const ASN1_INTEGER* serial) {
  OpenSslPtr<BIGNUM, BN_free> bn(ASN1_INTEGER_to_BN(serial, nullptr));
  if (bn == nullptr) return "?";
  char* hex = BN_bn2hex(bn.get());
  std::string out = hex != nullptr ? std::string(hex) : "?";
  OPENSSL_free(hex);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (!out.empty() && out[0] == '-') out.erase(0, 1);
  return out;
}

absl::Status CheckRevoked(const std::string& crl_file, const std::vector<X509*>& presented) {
  absl::StatusOr<Crl> crl = ReadCrl(crl_file);
  if (!crl.ok()) return crl.status();
  const STACK_OF(X509_REVOKED)* revoked = X509_CRL_get_REVOKED(crl->get());
  const int n = revoked == nullptr ? 0 : sk_X509_REVOKED_num(revoked);
  for (X509* cert : presented) {
    const ASN1_INTEGER* serial = X509_get0_serialNumber(cert);
    for (int i = 0; i < n; ++i) {
      if (ASN1_INTEGER_cmp(
              serial, X509_REVOKED_get0_serialNumber(sk_X509_REVOKED_value(revoked, i))) == 0) {
        return absl::PermissionDeniedError(
            absl::StrCat("transport: certificate serial ", SerialHex(serial), " revoked"));
      }
    }
  }
  return absl::OkStatus();
}

// The subject's common name; the last one when there are several, as Go reads it.
std::string CommonName(X509* cert) {
  X509_NAME* subject = X509_get_subject_name(cert);
  std::string name;
  for (int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) {
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
    name.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                static_cast<size_t>(ASN1_STRING_length(data)));
  }
  return name;
}

// Go's Certificate.VerifyHostname: an IP address (IPv6 possibly in brackets) against the IP
// names, anything else against the DNS names; never the common name.
bool ValidForHost(X509* cert, std::string host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  OpenSslPtr<ASN1_OCTET_STRING, ASN1_OCTET_STRING_free> ip(a2i_IPADDRESS(host.c_str()));
  if (ip != nullptr) return X509_check_ip_asc(cert, host.c_str(), 0) == 1;
  return X509_check_host(cert, host.data(), host.size(),
                         X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS,
                         nullptr) == 1;
}

}  // namespace

bool HasCertificateRules(const TlsFiles& files) {
  return !files.crl_file.empty() || !files.allowed_cn.empty() || !files.allowed_hostname.empty();
}

absl::Status ValidateCertificateRules(const TlsFiles& files) {
  if (!files.allowed_cn.empty() && !files.allowed_hostname.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AllowedCN and AllowedHostname are mutually exclusive (cn=\"",
                     files.allowed_cn, "\", hostname=\"", files.allowed_hostname, "\")"));
  }
  if (!files.crl_file.empty()) {
    absl::StatusOr<Crl> crl = ReadCrl(files.crl_file);
    if (!crl.ok()) return crl.status();
  }
  return absl::OkStatus();
}

absl::Status CheckPresentedCertificates(const TlsFiles& files,
                                        const std::vector<X509*>& presented) {
  if (presented.empty()) return absl::OkStatus();
  if (!files.crl_file.empty()) {
    if (absl::Status st = CheckRevoked(files.crl_file, presented); !st.ok()) return st;
  }
  const bool allowed = !files.allowed_cn.empty() ? CommonName(presented[0]) == files.allowed_cn
                       : !files.allowed_hostname.empty()
                           ? ValidForHost(presented[0], files.allowed_hostname)
                           : true;
  if (!allowed) return absl::PermissionDeniedError("client certificate authentication failed");
  return absl::OkStatus();
}

absl::Status CheckPresentedPem(const TlsFiles& files, std::string_view chain_pem) {
  Bio bio(BIO_new_mem_buf(chain_pem.data(), static_cast<int>(chain_pem.size())));
  if (bio == nullptr) return absl::ResourceExhaustedError("out of memory reading a certificate");
  std::vector<X509Cert> owned;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr))
    owned.emplace_back(cert);
  std::vector<X509*> presented;
  for (const auto& cert : owned) {
    if (presented.empty() || X509_cmp(cert.get(), presented[0]) != 0)
      presented.push_back(cert.get());
  }
  return CheckPresentedCertificates(files, presented);
}

AltNames AltNamesOf(X509* cert) {
  AltNames out;
  OpenSslPtr<GENERAL_NAMES, GENERAL_NAMES_free> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type == GEN_DNS) {
      const ASN1_IA5STRING* dns = name->d.dNSName;
      out.dns.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                           static_cast<size_t>(ASN1_STRING_length(dns)));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = name->d.iPAddress;
      const int length = ASN1_STRING_length(ip);
      char text[INET6_ADDRSTRLEN] = {};
      if ((length != 4 && length != 16) ||
          inet_ntop(length == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(ip), text,
                    sizeof text) == nullptr) {
        out.malformed_ip = true;
      } else {
        out.ips.emplace_back(text);
      }
    }
  }
  return out;
}

std::string GoHostnameError(X509* cert, const std::string& host) {
  if (X509_get_ext_by_NID(cert, NID_subject_alt_name, -1) < 0 && CommonName(cert) == host)
    return "x509: certificate relies on legacy Common Name field, use SANs instead";
  const AltNames names = AltNamesOf(cert);
  unsigned char raw[16];
  const bool is_ip =
      inet_pton(AF_INET, host.c_str(), raw) == 1 || inet_pton(AF_INET6, host.c_str(), raw) == 1;
  if (is_ip && names.ips.empty()) {
    return "x509: cannot validate certificate for " + host +
           " because it doesn't contain any IP SANs";
  }
  const std::string valid = absl::StrJoin(is_ip ? names.ips : names.dns, ", ");
  if (valid.empty())
    return "x509: certificate is not valid for any names, but wanted to match " + host;
  return absl::StrCat("x509: certificate is valid for ", valid, ", not ", host);
}

void LogRejectedCertificate(std::string_view port, const absl::Status& why) {
  LogWarn("rejected connection",
          {{"port", std::string(port)}, {"error", std::string(why.message())}});
}

}  // namespace leasehold::server
