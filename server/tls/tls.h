// TLS for the gRPC ports, from etcd's flags: a URL's scheme decides (http:// plain, https:// TLS),
// and the files named by --cert-file/--key-file/--trusted-ca-file/--client-cert-auth (client port)
// or their --peer-* twins (peer port) supply the certificates.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"
#include "server/tls/tls_files.h"

namespace leasehold::server {

// Credentials to listen on `url` with. https:// needs cert_file and key_file, and client_cert_auth
// needs trusted_ca_file; InvalidArgument names what is missing or unreadable, or what is wrong with
// etcd's further rules (certificate_rules.h), which apply under client_cert_auth. `port_name`
// ("client", "peer") names the port in the log line of a refused certificate.
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const std::string& url, const TlsFiles& files, std::string_view port_name);

// Credentials for dialling `url` as a peer: for https://, trusting trusted_ca_file (the system's
// roots when empty) and presenting cert_file/key_file when given, as etcd's peers do; with
// self-signed files (--peer-auto-tls), presenting them and trusting any certificate, as etcd's do.
// etcd's --peer-cert-allowed-cn/-hostname apply to the server's certificate too (a refused one is
// logged as "rejected connection" and nothing is sent), as they do in etcd's dialer.
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(
    const std::string& url, const TlsFiles& files);
// A channel to another member's peer `url`, with ChannelCredentialsFor(url, files), for a few calls
// (joining, the initial corruption check); the Raft stream has its own (peer_transport.h).
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::Channel>> DialPeer(const std::string& url,
                                                                      const TlsFiles& files);

bool IsHttpsUrl(const std::string& url);
// Whether any of `urls` is https://.
bool AnyHttpsUrl(const std::vector<std::string>& urls);
// InvalidArgument when `url` is https:// and `files` name no certificate and key.
[[nodiscard]] absl::Status CheckCertificateGiven(const std::string& url, const TlsFiles& files);

}  // namespace leasehold::server
