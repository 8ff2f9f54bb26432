#include "server/tls/peer_address_check.h"

#include <arpa/inet.h>

#include <algorithm>
#include <memory>
#include <string_view>
#include <vector>

#include <grpcpp/server_context.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/observability/log.h"

namespace leasehold::server {
namespace {

constexpr size_t kMaxRemembered = 4096;

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

std::string IpOfGrpcPeer(const std::string& peer) {
  const size_t colon = peer.find(':');
  if (colon == std::string::npos) return "";
  const std::string scheme = peer.substr(0, colon);
  std::string rest = peer.substr(colon + 1);
  if (scheme == "ipv4") {
    const size_t port = rest.rfind(':');
    return port == std::string::npos ? rest : rest.substr(0, port);
  }
  if (scheme != "ipv6") return "";
  for (const auto& [open, close] :
       {std::pair<std::string, std::string>{"[", "]"}, {"%5B", "%5D"}, {"%5b", "%5d"}}) {
    if (rest.rfind(open, 0) == 0) {
      const size_t end = rest.find(close);
      return end == std::string::npos ? "" : rest.substr(open.size(), end - open.size());
    }
  }
  return "";
}

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

absl::Status PeerAddressCheck::Check(const grpc::ServerContextBase& context) {
  if (!enabled_) return absl::OkStatus();
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return absl::OkStatus();
  const std::vector<grpc::string_ref> pem =
      auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (pem.empty()) return absl::OkStatus();
  std::pair<std::string, uint64_t> key{
      context.peer(), absl::HashOf(std::string_view(pem[0].data(), pem[0].size()))};
  {
    absl::MutexLock lock(&mu_);
    if (auto it = outcomes_.find(key); it != outcomes_.end()) return it->second;
  }
  absl::Status outcome;
  std::unique_ptr<BIO, int (*)(BIO*)> bio(
      BIO_new_mem_buf(pem[0].data(), static_cast<int>(pem[0].size())), BIO_free);
  std::unique_ptr<X509, void (*)(X509*)> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  const std::string ip = IpOfGrpcPeer(key.first);
  if (cert == nullptr) {
    outcome = absl::PermissionDeniedError("tls: unreadable peer certificate");
  } else if (!ip.empty()) {
    outcome = CheckCertificateAddress(cert.get(), ip);
  }
  if (!outcome.ok()) {
    LogWarn(
        "rejected connection",
        {{"port", "peer"}, {"remote-addr", key.first}, {"error", std::string(outcome.message())}});
  }
  absl::MutexLock lock(&mu_);
  if (outcomes_.size() >= kMaxRemembered) outcomes_.clear();
  outcomes_.emplace(std::move(key), outcome);
  return outcome;
}

}  // namespace leasehold::server
