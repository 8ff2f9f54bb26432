// gRPC's TLS for the client port, from etcd's flags: a URL's scheme decides (http:// plain,
// https:// TLS), and the files named by --cert-file/--key-file/--trusted-ca-file/--client-cert-auth
// supply the certificates. (The peer port's TLS is this process's own: server/peer.)
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"
#include "server/tls/tls_files.h"

namespace leasehold::server {

// Credentials to listen on `url` with. https:// needs cert_file and key_file, and client_cert_auth
// needs trusted_ca_file; InvalidArgument names what is missing or unreadable, or what is wrong with
// etcd's further rules (certificate_rules.h), which apply under client_cert_auth. `port_name`
// names the port in the log line of a refused certificate.
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const std::string& url, const TlsFiles& files, std::string_view port_name);

bool IsHttpsUrl(const std::string& url);
// Whether any of `urls` is https://.
bool AnyHttpsUrl(const std::vector<std::string>& urls);
// InvalidArgument when `url` is https:// and `files` name no certificate and key.
[[nodiscard]] absl::Status CheckCertificateGiven(const std::string& url, const TlsFiles& files);

}  // namespace leasehold::server
