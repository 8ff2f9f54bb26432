#include "server/command/auto_tls.h"

#include <string>
#include <vector>

#include "common/url.h"
#include "server/observability/log.h"
#include "server/tls/self_signed_cert.h"

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

}  // namespace leasehold::server
