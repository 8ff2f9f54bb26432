#include "server/tls/tls_context.h"

#include <arpa/inet.h>

#include <vector>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_cat.h"
#include "boost/asio/error.hpp"
#include "boost/asio/ssl/error.hpp"
#include "boost/asio/ssl/verify_context.hpp"
#include "server/tls/certificate_rules.h"

namespace leasehold::server {
namespace {

namespace asio = boost::asio;
using Context = asio::ssl::context;

int RefusalSlot() {
  static const int slot = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return slot;
}

// Go's names of TLS alerts (crypto/tls), which etcd's logs show after "remote error: tls: ".
std::string GoAlertName(int alert) {
  switch (alert) {
    case 0:
      return "close notify";
    case 10:
      return "unexpected message";
    case 20:
      return "bad record MAC";
    case 21:
      return "decryption failed";
    case 22:
      return "record overflow";
    case 30:
      return "decompression failure";
    case 40:
      return "handshake failure";
    case 42:
      return "bad certificate";
    case 43:
      return "unsupported certificate";
    case 44:
      return "revoked certificate";
    case 45:
      return "expired certificate";
    case 46:
      return "unknown certificate";
    case 47:
      return "illegal parameter";
    case 48:
      return "unknown certificate authority";
    case 49:
      return "access denied";
    case 50:
      return "error decoding message";
    case 51:
      return "error decrypting message";
    case 70:
      return "protocol version not supported";
    case 71:
      return "insufficient security level";
    case 80:
      return "internal error";
    case 86:
      return "inappropriate fallback";
    case 90:
      return "user canceled";
    case 100:
      return "no renegotiation";
    case 109:
      return "missing extension";
    case 110:
      return "unsupported extension";
    case 112:
      return "unrecognized name";
    case 116:
      return "certificate required";
    case 120:
      return "no application protocol";
    default:
      return absl::StrCat("alert(", alert, ")");
  }
}

// Go's words for a certificate that failed verification (x509's errors).
std::string GoVerifyError(long result) {
  switch (result) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_UNTRUSTED:
      return "x509: certificate signed by unknown authority";
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return "x509: certificate has expired or is not yet valid";
    default:
      return absl::StrCat("x509: ", X509_verify_cert_error_string(result));
  }
}

// The host name or IP address a dialler's verification expects (ExpectServerName's).
std::string ExpectedHost(X509_STORE_CTX* store) {
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(store);
  if (const char* host = X509_VERIFY_PARAM_get0_host(param, 0); host != nullptr) return host;
  char* ip = X509_VERIFY_PARAM_get1_ip_asc(param);
  std::string text = ip != nullptr ? ip : "";
  OPENSSL_free(ip);
  return text;
}

// What OpenSSL's verification finds, then etcd's rules once it has verified the whole chain (the
// callback's last call, for the leaf). Any refusal is marked as a rejected certificate, which
// OpenSSL answers with bad_certificate, as Go's TLS stack answers every failed verification.
void VerifyAsGoDoes(Context& context, TlsFiles rules, std::string port_name) {
  context.set_verify_callback([rules = std::move(rules), port_name = std::move(port_name)](
                                  bool preverified, asio::ssl::verify_context& verify) {
    X509_STORE_CTX* store = verify.native_handle();
    auto* ssl =
        static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
    auto* slot =
        ssl == nullptr ? nullptr : static_cast<std::string*>(SSL_get_ex_data(ssl, RefusalSlot()));
    if (!preverified) {
      if (slot != nullptr && slot->empty()) {
        const int error = X509_STORE_CTX_get_error(store);
        if (error == X509_V_ERR_HOSTNAME_MISMATCH || error == X509_V_ERR_IP_ADDRESS_MISMATCH) {
          *slot = GoHostnameError(X509_STORE_CTX_get_current_cert(store), ExpectedHost(store));
        } else {
          *slot = GoVerifyError(error);
        }
        if (SSL_is_server(ssl) == 1) *slot = "tls: failed to verify client certificate: " + *slot;
      }
      X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED);
      return false;
    }
    if (X509_STORE_CTX_get_error_depth(store) != 0 || !HasCertificateRules(rules)) return true;
    // The chain the other side sent is what meets the revocation list.
    std::vector<X509*> presented{X509_STORE_CTX_get_current_cert(store)};
    if (STACK_OF(X509)* sent = X509_STORE_CTX_get0_untrusted(store)) {
      for (int i = 0; i < sk_X509_num(sent); ++i) {
        if (X509_cmp(sk_X509_value(sent, i), presented[0]) != 0)
          presented.push_back(sk_X509_value(sent, i));
      }
    }
    absl::Status st = CheckPresentedCertificates(rules, presented);
    if (st.ok()) return true;
    X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED);
    if (slot != nullptr) {
      *slot = std::string(st.message());
    } else {
      LogRejectedCertificate(port_name, st);
    }
    return false;
  });
}

absl::Status UseCipherList(Context& context, const TlsFiles& files) {
  if (!files.cipher_list.empty() &&
      SSL_CTX_set_cipher_list(context.native_handle(), files.cipher_list.c_str()) != 1) {
    return absl::InvalidArgumentError("cannot use the cipher suites " + files.cipher_list);
  }
  return absl::OkStatus();
}

absl::Status UseCertificate(Context& context, const TlsFiles& files) {
  boost::system::error_code ec;
  context.use_certificate_chain_file(files.cert_file, ec);
  if (ec) {
    return absl::InvalidArgumentError("cannot use certificate " + files.cert_file + ": " +
                                      ec.message());
  }
  context.use_private_key_file(files.key_file, Context::pem, ec);
  if (ec)
    return absl::InvalidArgumentError("cannot use key " + files.key_file + ": " + ec.message());
  return absl::OkStatus();
}

constexpr auto kTls12AndLater = Context::default_workarounds | Context::no_sslv2 |
                                Context::no_sslv3 | Context::no_tlsv1 | Context::no_tlsv1_1;

}  // namespace

absl::StatusOr<std::unique_ptr<Context>> MakeServerTlsContext(const TlsFiles& files,
                                                              std::string_view port_name) {
  if (files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError("https needs --cert-file and --key-file");
  }
  if (files.client_cert_auth && files.trusted_ca_file.empty()) {
    return absl::InvalidArgumentError("--client-cert-auth needs --trusted-ca-file");
  }
  auto context = std::make_unique<Context>(Context::tls_server);
  context->set_options(kTls12AndLater);
  if (absl::Status st = UseCertificate(*context, files); !st.ok()) return st;
  if (absl::Status st = UseCipherList(*context, files); !st.ok()) return st;
  if (!files.trusted_ca_file.empty()) {
    boost::system::error_code ec;
    context->load_verify_file(files.trusted_ca_file, ec);
    if (ec) {
      return absl::InvalidArgumentError("cannot read CA file " + files.trusted_ca_file + ": " +
                                        ec.message());
    }
  }
  if (files.client_cert_auth) {
    context->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
    // Only certificates that were asked for and verified meet etcd's further rules.
    if (absl::Status st = ValidateCertificateRules(files); !st.ok()) return st;
    VerifyAsGoDoes(*context, files, std::string(port_name));
  }
  return context;
}

absl::StatusOr<std::unique_ptr<Context>> MakeDialerTlsContext(const TlsFiles& files) {
  auto context = std::make_unique<Context>(Context::tls_client);
  context->set_options(kTls12AndLater);
  if (!files.cert_file.empty() && !files.key_file.empty()) {
    if (absl::Status st = UseCertificate(*context, files); !st.ok()) return st;
  }
  if (absl::Status st = UseCipherList(*context, files); !st.ok()) return st;
  if (files.self_signed) {
    context->set_verify_mode(asio::ssl::verify_none);  // nobody could vouch for the other side
    return context;
  }
  boost::system::error_code ec;
  if (files.trusted_ca_file.empty()) {
    context->set_default_verify_paths(ec);
  } else {
    context->load_verify_file(files.trusted_ca_file, ec);
  }
  if (ec) {
    return absl::InvalidArgumentError("cannot read CA file " + files.trusted_ca_file + ": " +
                                      ec.message());
  }
  context->set_verify_mode(asio::ssl::verify_peer);
  TlsFiles rules = files;
  rules.crl_file.clear();
  if (absl::Status st = ValidateCertificateRules(rules); !st.ok()) return st;
  VerifyAsGoDoes(*context, std::move(rules), "peer");
  return context;
}

absl::Status ExpectServerName(SSL* ssl, const TlsFiles& files, const std::string& host) {
  if (files.self_signed || host.empty()) return absl::OkStatus();
  in6_addr ip;
  const bool is_ip =
      inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1;
  if (is_ip) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) != 1)
      return absl::InvalidArgumentError("bad peer address " + host);
    return absl::OkStatus();
  }
  if (SSL_set1_host(ssl, host.c_str()) != 1 || SSL_set_tlsext_host_name(ssl, host.c_str()) != 1)
    return absl::InvalidArgumentError("bad peer host name " + host);
  return absl::OkStatus();
}

void KeepRefusalIn(SSL* ssl, std::string* reason) { SSL_set_ex_data(ssl, RefusalSlot(), reason); }

std::string HandshakeFailureText(SSL* ssl, const boost::system::error_code& error,
                                 std::string_view refusal) {
  if (error == asio::error::eof || error == asio::ssl::error::stream_truncated) return "EOF";
  if (error.category() != asio::error::get_ssl_category()) return error.message();
  const unsigned long code = static_cast<unsigned long>(error.value());
  const int reason = ERR_GET_REASON(code);
  if (reason >= SSL_AD_REASON_OFFSET && reason < SSL_AD_REASON_OFFSET + 256) {
    return "remote error: tls: " + GoAlertName(reason - SSL_AD_REASON_OFFSET);
  }
  const bool server = ssl != nullptr && SSL_is_server(ssl) == 1;
  switch (reason) {
    case SSL_R_CERTIFICATE_VERIFY_FAILED: {
      if (!refusal.empty()) return std::string(refusal);
      const std::string why =
          GoVerifyError(ssl == nullptr ? X509_V_OK : SSL_get_verify_result(ssl));
      return server ? "tls: failed to verify client certificate: " + why : why;
    }
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      return "tls: client didn't provide a certificate";
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_HTTP_REQUEST:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
    case SSL_R_RECORD_LENGTH_MISMATCH:
      return "tls: first record does not look like a TLS handshake";
    default: {
      const char* text = ERR_reason_error_string(code);
      return text != nullptr ? std::string("tls: ") + text : error.message();
    }
  }
}

}  // namespace leasehold::server
