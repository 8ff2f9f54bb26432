#include "server/command/tls_flags.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "common/url.h"
#include "server/observability/log.h"
#include "server/tls/certificate_rules.h"
#include "server/tls/cipher_suites.h"
#include "server/tls/self_signed_cert.h"
#include "server/tls/tls.h"

namespace leasehold::server {
namespace {

absl::Status ApplyTo(bool enabled, const std::string& dir, const std::vector<std::string>& urls,
                     const char* flag, const char* files_flags, TlsFiles* files) {
  if (!enabled) return absl::OkStatus();
  if (!files->cert_file.empty() || !files->key_file.empty()) {
    LogWarn(std::string("ignoring ") + flag + " since certs given",
            {{"certificates", files_flags}});
    return absl::OkStatus();
  }
  std::vector<std::string> hosts;
  for (const std::string& url : urls) {
    if (IsUnixUrl(url)) continue;  // a socket file has no host name to certify
    absl::StatusOr<std::string> host_port = HostPortOfUrl(url);
    if (!host_port.ok()) return host_port.status();
    hosts.push_back(*host_port);
  }
  return EnsureSelfSignedCert(dir, hosts, files);
}

}  // namespace

absl::Status ApplyAutoTls(Flags* flags) {
  const std::string fixtures = flags->data_dir + "/fixtures";
  if (absl::Status st = ApplyTo(flags->auto_tls, fixtures + "/client", flags->listen_client_urls,
                                "client auto TLS", "--cert-file, --key-file", &flags->client_tls);
      !st.ok()) {
    return st;
  }
  return ApplyTo(flags->peer_auto_tls, fixtures + "/peer", flags->listen_peer_urls, "peer auto TLS",
                 "--peer-cert-file, --peer-key-file", &flags->peer_tls);
}

absl::Status CheckTlsFlags(Flags* flags) {
  for (const auto& [tls, port] :
       {std::pair{&flags->client_tls, "client"}, std::pair{&flags->peer_tls, "peer"}}) {
    if (absl::Status st = ValidateCertificateRules(*tls); !st.ok()) return st;
    if (HasCertificateRules(*tls) && !tls->client_cert_auth) {
      // etcd applies them to verified certificates only, which are asked for under client cert
      // auth.
      LogWarn(std::string(port) +
              " certificate revocation list and allowed name have no effect without " +
              (tls == &flags->client_tls ? "--client-cert-auth" : "--peer-client-cert-auth"));
    }
  }
  if (!flags->cipher_suites.empty()) {
    absl::StatusOr<std::string> ciphers = OpenSslCipherList(flags->cipher_suites);
    if (!ciphers.ok()) return WithContext("bad --cipher-suites", ciphers.status());
    if (AnyHttpsUrl(flags->listen_client_urls)) {
      if (absl::Status st = CheckHttp2CipherSuites(flags->cipher_suites); !st.ok())
        return WithContext("bad --cipher-suites", st);
    }
    flags->client_tls.cipher_list = flags->peer_tls.cipher_list = *ciphers;
    // gRPC takes its TLS 1.2 cipher list from the environment, read when it first makes a TLS
    // context (none has been made yet): for the client and peer ports and for dialling peers.
    setenv("GRPC_SSL_CIPHER_SUITES", ciphers->c_str(), 1);
  }
  return absl::OkStatus();
}

}  // namespace leasehold::server
