#include "server/tls.h"

#include <fstream>
#include <iterator>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>

namespace leasehold::server {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(std::string("cannot read ") + flag + " '" + path + "'");
  std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (pem.find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(std::string(flag) + " '" + path + "' holds no PEM data");
  }
  return pem;
}

// TLS that encrypts but trusts any certificate, presenting our own self-signed one: what etcd's
// peers do under --peer-auto-tls, where no CA could vouch for anybody.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> UnverifiedChannelCredentials(const TlsFiles& files) {
  auto cert = ReadPem(files.cert_file, "certificate file");
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(files.key_file, "key file");
  if (!key.ok()) return key.status();
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
      std::vector<grpc::experimental::IdentityKeyCertPair>{{*key, *cert}}));
  options.watch_identity_key_cert_pairs();
  options.set_verify_server_certs(false);
  options.set_check_call_host(false);
  options.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
  return grpc::experimental::TlsCredentials(options);
}

}  // namespace

bool IsHttpsUrl(const std::string& url) { return url.rfind("https://", 0) == 0; }

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(const std::string& url,
                                                                              const TlsFiles& files) {
  if (!IsHttpsUrl(url)) return grpc::InsecureServerCredentials();
  if (files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError("'" + url + "' is https:// but no certificate and key were given");
  }
  auto cert = ReadPem(files.cert_file, "certificate file");
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(files.key_file, "key file");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!files.trusted_ca_file.empty()) {
    auto ca = ReadPem(files.trusted_ca_file, "trusted CA file");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
  }
  if (files.client_cert_auth) {
    if (files.trusted_ca_file.empty()) {
      return absl::InvalidArgumentError("client certificate authentication needs a trusted CA file");
    }
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(const std::string& url,
                                                                                const TlsFiles& files) {
  if (!IsHttpsUrl(url)) return grpc::InsecureChannelCredentials();
  if (files.self_signed) return UnverifiedChannelCredentials(files);
  grpc::SslCredentialsOptions options;
  if (!files.trusted_ca_file.empty()) {
    auto ca = ReadPem(files.trusted_ca_file, "trusted CA file");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
  }
  if (!files.cert_file.empty() && !files.key_file.empty()) {
    auto cert = ReadPem(files.cert_file, "certificate file");
    if (!cert.ok()) return cert.status();
    auto key = ReadPem(files.key_file, "key file");
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *cert;
    options.pem_private_key = *key;
  }
  return grpc::SslCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> DialPeer(const std::string& url, const TlsFiles& files) {
  absl::StatusOr<std::string> address = HostPortOfUrl(url);
  if (!address.ok()) return address.status();
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = ChannelCredentialsFor(url, files);
  if (!credentials.ok()) return credentials.status();
  return grpc::CreateChannel(*address, *credentials);
}

}  // namespace leasehold::server
