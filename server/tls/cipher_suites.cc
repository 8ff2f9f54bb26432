#include "server/tls/cipher_suites.h"

#include <algorithm>
#include <map>
#include <memory>

#include <openssl/ssl.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace leasehold::server {
namespace {

// Every name Go's crypto/tls knows (its secure and insecure suites), with the standard (IANA) name
// OpenSSL knows it by; empty for TLS 1.3 suites, which only name what is always on.
const std::map<std::string, std::string>& GoCipherSuites() {
  static const auto* suites = new std::map<std::string, std::string>{
      {"TLS_AES_128_GCM_SHA256", ""},
      {"TLS_AES_256_GCM_SHA384", ""},
      {"TLS_CHACHA20_POLY1305_SHA256", ""},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
      {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
      {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
       "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
       "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"},
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"},
      {"TLS_RSA_WITH_RC4_128_SHA", "TLS_RSA_WITH_RC4_128_SHA"},
      {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "TLS_RSA_WITH_3DES_EDE_CBC_SHA"},
      {"TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_128_CBC_SHA"},
      {"TLS_RSA_WITH_AES_256_CBC_SHA", "TLS_RSA_WITH_AES_256_CBC_SHA"},
      {"TLS_RSA_WITH_AES_128_CBC_SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA256"},
      {"TLS_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_128_GCM_SHA256"},
      {"TLS_RSA_WITH_AES_256_GCM_SHA384", "TLS_RSA_WITH_AES_256_GCM_SHA384"},
      {"TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA"},
      {"TLS_ECDHE_RSA_WITH_RC4_128_SHA", "TLS_ECDHE_RSA_WITH_RC4_128_SHA"},
      {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"},
      {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"},
  };
  return *suites;
}

// OpenSSL's own name for each TLS 1.2 suite it has, by standard name.
std::map<std::string, std::string> OpenSslNames() {
  std::map<std::string, std::string> names;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_method()), SSL_CTX_free);
  if (!ctx || SSL_CTX_set_cipher_list(ctx.get(), "ALL:COMPLEMENTOFALL") != 1) return names;
  STACK_OF(SSL_CIPHER)* ciphers = SSL_CTX_get_ciphers(ctx.get());
  for (int i = 0; i < sk_SSL_CIPHER_num(ciphers); ++i) {
    const SSL_CIPHER* c = sk_SSL_CIPHER_value(ciphers, i);
    if (const char* standard = SSL_CIPHER_standard_name(c))
      names[standard] = SSL_CIPHER_get_name(c);
  }
  return names;
}

}  // namespace

absl::StatusOr<std::string> OpenSslCipherList(const std::vector<std::string>& go_names) {
  const std::map<std::string, std::string> openssl = OpenSslNames();
  std::vector<std::string> list;
  for (const std::string& name : go_names) {
    auto known = GoCipherSuites().find(name);
    if (known == GoCipherSuites().end()) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected TLS cipher suite \"", name, "\""));
    }
    if (known->second.empty()) continue;  // TLS 1.3: always on
    auto available = openssl.find(known->second);
    if (available == openssl.end()) continue;
    if (std::find(list.begin(), list.end(), available->second) == list.end())
      list.push_back(available->second);
  }
  if (list.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("none of the cipher suites \"",
                                                   absl::StrJoin(go_names, ","),
                                                   "\" is available for TLS 1.2 here"));
  }
  return absl::StrJoin(list, ":");
}

absl::Status CheckHttp2CipherSuites(const std::vector<std::string>& go_names) {
  for (const std::string& name : go_names) {
    if (name == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" ||
        name == "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256") {
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      "http2: TLSConfig.CipherSuites is missing an HTTP/2-required AES_128_GCM_SHA256 cipher (need "
      "at least one of "
      "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)");
}

}  // namespace leasehold::server
