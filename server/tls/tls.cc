#include "server/tls/tls.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "common/url.h"
#include "server/observability/log.h"
#include "server/tls/certificate_rules.h"

namespace leasehold::server {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::InvalidArgumentError(std::string("cannot read ") + flag + " '" + path + "'");
  std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (pem.find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(std::string(flag) + " '" + path + "' holds no PEM data");
  }
  return pem;
}

// TLS that encrypts but trusts any certificate, presenting our own self-signed one: what etcd's
// peers do under --peer-auto-tls, where no CA could vouch for anybody.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> UnverifiedChannelCredentials(
    const TlsFiles& files) {
  auto cert = ReadPem(files.cert_file, "certificate file");
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(files.key_file, "key file");
  if (!key.ok()) return key.status();
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(
      std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
          std::vector<grpc::experimental::IdentityKeyCertPair>{{*key, *cert}}));
  options.watch_identity_key_cert_pairs();
  options.set_verify_server_certs(false);
  options.set_check_call_host(false);
  options.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
  return grpc::experimental::TlsCredentials(options);
}

// The certificates the other side presented, in PEM, the leaf first: on a server, OpenSSL's chain
// of the peer may leave it out.
std::string PresentedPem(const grpc::experimental::TlsCustomVerificationCheckRequest& request) {
  const grpc::string_ref leaf = request.peer_cert(), rest = request.peer_cert_full_chain();
  std::string presented(leaf.data(), leaf.size());
  presented.append("\n").append(rest.data(), rest.size());
  return presented;
}

// etcd's rules for presented certificates (certificate_rules.h), checked once gRPC has verified
// the chain against the trusted CA.
class RulesVerifier final : public grpc::experimental::ExternalCertificateVerifier {
 public:
  RulesVerifier(TlsFiles files, std::string port_name)
      : files_(std::move(files)), port_name_(std::move(port_name)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)>, grpc::Status* sync_status) override {
    const std::string presented = PresentedPem(*request);
    absl::Status st = CheckPresentedPem(files_, presented);
    if (st.ok()) {
      *sync_status = grpc::Status::OK;
    } else {
      LogRejectedCertificate(port_name_, st);
      *sync_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(st.message()));
    }
    return true;  // decided at once
  }
  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest*) override {}

 private:
  const TlsFiles files_;
  const std::string port_name_;
};

// A dialer's check of the server's certificate when etcd's rules apply: the host name the channel
// targets (what gRPC's own verifier checks, which this one replaces), then the rules.
class ServerRulesVerifier final : public grpc::experimental::ExternalCertificateVerifier {
 public:
  explicit ServerRulesVerifier(TlsFiles rules) : rules_(std::move(rules)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)>, grpc::Status* sync_status) override {
    const std::string presented = PresentedPem(*request);
    std::string host(request->target_name().data(), request->target_name().size());
    if (host.starts_with('[')) {
      host = host.substr(1, host.find(']') - 1);
    } else if (std::count(host.begin(), host.end(), ':') == 1) {
      host = host.substr(0, host.find(':'));
    }
    TlsFiles host_rule;
    host_rule.allowed_hostname = host;
    absl::Status st = CheckPresentedPem(host_rule, presented);
    if (st.ok()) st = CheckPresentedPem(rules_, presented);
    if (st.ok()) {
      *sync_status = grpc::Status::OK;
    } else {
      LogRejectedCertificate("peer", st);
      *sync_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(st.message()));
    }
    return true;  // decided at once
  }
  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest*) override {}

 private:
  const TlsFiles rules_;
};

}  // namespace

bool IsHttpsUrl(const std::string& url) {
  return url.rfind("https://", 0) == 0 || url.rfind("unixs://", 0) == 0;
}

bool AnyHttpsUrl(const std::vector<std::string>& urls) {
  return std::any_of(urls.begin(), urls.end(), IsHttpsUrl);
}

absl::Status CheckCertificateGiven(const std::string& url, const TlsFiles& files) {
  if (IsHttpsUrl(url) && (files.cert_file.empty() || files.key_file.empty())) {
    return absl::InvalidArgumentError("'" + url +
                                      "' is https:// but no certificate and key were given");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const std::string& url, const TlsFiles& files, std::string_view port_name) {
  if (!IsHttpsUrl(url)) return grpc::InsecureServerCredentials();
  if (absl::Status st = CheckCertificateGiven(url, files); !st.ok()) return st;
  auto cert = ReadPem(files.cert_file, "certificate file");
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(files.key_file, "key file");
  if (!key.ok()) return key.status();
  std::string ca;
  if (!files.trusted_ca_file.empty()) {
    auto read = ReadPem(files.trusted_ca_file, "trusted CA file");
    if (!read.ok()) return read.status();
    ca = *std::move(read);
  }
  if (files.client_cert_auth && ca.empty()) {
    return absl::InvalidArgumentError("client certificate authentication needs a trusted CA file");
  }
  if (absl::Status st = ValidateCertificateRules(files); !st.ok()) return st;
  std::vector<grpc::experimental::IdentityKeyCertPair> identity{{*key, *cert}};
  auto provider =
      ca.empty()
          ? std::make_shared<grpc::experimental::StaticDataCertificateProvider>(identity)
          : std::make_shared<grpc::experimental::StaticDataCertificateProvider>(ca, identity);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (!ca.empty()) options.watch_root_certs();
  if (files.client_cert_auth) {
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    // Only certificates that were asked for and verified meet etcd's further rules.
    if (HasCertificateRules(files)) {
      options.set_certificate_verifier(
          grpc::experimental::ExternalCertificateVerifier::Create<RulesVerifier>(
              files, std::string(port_name)));
    }
  }
  return grpc::experimental::TlsServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(
    const std::string& url, const TlsFiles& files) {
  if (!IsHttpsUrl(url)) return grpc::InsecureChannelCredentials();
  if (files.self_signed) return UnverifiedChannelCredentials(files);
  if (HasCertificateRules(files) && !files.trusted_ca_file.empty()) {
    // etcd checks a peer's certificate against --peer-cert-allowed-cn/-hostname in both
    // directions: a leader never sends to a member whose server certificate breaks them. The
    // revocation list is the listener's alone, as in etcd.
    TlsFiles rules = files;
    rules.crl_file.clear();
    auto ca = ReadPem(files.trusted_ca_file, "trusted CA file");
    if (!ca.ok()) return ca.status();
    std::vector<grpc::experimental::IdentityKeyCertPair> identity;
    if (!files.cert_file.empty() && !files.key_file.empty()) {
      auto cert = ReadPem(files.cert_file, "certificate file");
      if (!cert.ok()) return cert.status();
      auto key = ReadPem(files.key_file, "key file");
      if (!key.ok()) return key.status();
      identity.push_back({*key, *cert});
    }
    grpc::experimental::TlsChannelCredentialsOptions options;
    options.set_certificate_provider(
        std::make_shared<grpc::experimental::StaticDataCertificateProvider>(*ca, identity));
    options.watch_root_certs();
    if (!identity.empty()) options.watch_identity_key_cert_pairs();
    options.set_verify_server_certs(true);
    options.set_certificate_verifier(
        grpc::experimental::ExternalCertificateVerifier::Create<ServerRulesVerifier>(rules));
    return grpc::experimental::TlsCredentials(options);
  }
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

absl::StatusOr<std::shared_ptr<grpc::Channel>> DialPeer(const std::string& url,
                                                        const TlsFiles& files) {
  absl::StatusOr<std::string> address = GrpcAddressOfUrl(url);
  if (!address.ok()) return address.status();
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ChannelCredentialsFor(url, files);
  if (!credentials.ok()) return credentials.status();
  return grpc::CreateChannel(*address, *credentials);
}

}  // namespace leasehold::server
