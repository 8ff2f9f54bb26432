#include "server/peer_address_check.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>

#include <grpcpp/server_context.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/log.h"

namespace leasehold::server {
namespace {

constexpr size_t kMaxRemembered = 4096;

// The addresses `name` resolves to, as text.
std::vector<std::string> Resolve(const std::string& name) {
  std::vector<std::string> out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0) return out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = a->ai_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
                                              : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (inet_ntop(a->ai_family, raw, text, sizeof text) != nullptr) out.emplace_back(text);
  }
  freeaddrinfo(found);
  return out;
}

// The same address, whatever its spelling ("::ffff:10.0.0.1" is 10.0.0.1).
std::string Canonical(const std::string& ip) {
  unsigned char raw[16];
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_pton(AF_INET, ip.c_str(), raw) == 1) return ip;
  if (inet_pton(AF_INET6, ip.c_str(), raw) != 1) return ip;
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(raw, raw + 12, kMapped)) return inet_ntop(AF_INET, raw + 12, text, sizeof text) ? text : ip;
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
  for (const auto& [open, close] : {std::pair<std::string, std::string>{"[", "]"}, {"%5B", "%5D"}, {"%5b", "%5d"}}) {
    if (rest.rfind(open, 0) == 0) {
      const size_t end = rest.find(close);
      return end == std::string::npos ? "" : rest.substr(open.size(), end - open.size());
    }
  }
  return "";
}

absl::Status CheckCertificateAddress(X509* cert, const std::string& ip,
                                     const std::function<std::vector<std::string>(const std::string&)>& resolve) {
  std::vector<std::string> ips, dns;
  std::unique_ptr<GENERAL_NAMES, void (*)(GENERAL_NAMES*)> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)),
      [](GENERAL_NAMES* n) { GENERAL_NAMES_free(n); });
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type == GEN_DNS) {
      const ASN1_IA5STRING* s = name->d.dNSName;
      dns.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), ASN1_STRING_length(s));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* s = name->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      const int family = ASN1_STRING_length(s) == 4 ? AF_INET : AF_INET6;
      if (inet_ntop(family, ASN1_STRING_get0_data(s), text, sizeof text) != nullptr) ips.emplace_back(text);
    }
  }
  const std::string caller = Canonical(ip);
  if (!ips.empty()) {
    for (const std::string& named : ips) {
      if (Canonical(named) == caller) return absl::OkStatus();
    }
    if (dns.empty()) {
      return absl::PermissionDeniedError(
          absl::StrCat("x509: certificate is valid for ", absl::StrJoin(ips, ", "), ", not ", ip));
    }
  }
  if (!dns.empty()) {
    for (const std::string& name : dns) {
      for (const std::string& address : resolve(name)) {
        if (Canonical(address) == caller) return absl::OkStatus();
      }
    }
    std::vector<std::string> quoted;
    for (const std::string& name : dns) quoted.push_back("\"" + name + "\"");
    return absl::PermissionDeniedError(
        absl::StrCat("tls: \"", ip, "\" does not match any of DNSNames [", absl::StrJoin(quoted, " "), "]"));
  }
  return absl::OkStatus();
}

absl::Status PeerAddressCheck::Check(const grpc::ServerContextBase& context) {
  if (!enabled_) return absl::OkStatus();
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return absl::OkStatus();
  const std::vector<grpc::string_ref> pem = auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (pem.empty()) return absl::OkStatus();
  const std::string peer = context.peer();
  std::string key = peer;
  key.append("\n").append(pem[0].data(), pem[0].size());
  {
    absl::MutexLock lock(&mu_);
    if (auto it = outcomes_.find(key); it != outcomes_.end()) return it->second;
  }
  absl::Status outcome;
  std::unique_ptr<BIO, int (*)(BIO*)> bio(BIO_new_mem_buf(pem[0].data(), static_cast<int>(pem[0].size())), BIO_free);
  std::unique_ptr<X509, void (*)(X509*)> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  const std::string ip = IpOfGrpcPeer(peer);
  if (cert == nullptr) {
    outcome = absl::PermissionDeniedError("tls: unreadable peer certificate");
  } else if (!ip.empty()) {
    outcome = CheckCertificateAddress(cert.get(), ip, Resolve);
  }
  if (!outcome.ok()) {
    LogWarn("rejected connection", {{"port", "peer"}, {"remote-addr", peer}, {"error", std::string(outcome.message())}});
  }
  absl::MutexLock lock(&mu_);
  if (outcomes_.size() >= kMaxRemembered) outcomes_.clear();
  outcomes_.emplace(std::move(key), outcome);
  return outcome;
}

}  // namespace leasehold::server
