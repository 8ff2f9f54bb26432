#include "server/tls/tls.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>

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

}  // namespace leasehold::server
