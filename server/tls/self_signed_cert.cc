#include "server/tls/self_signed_cert.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <set>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_join.h"
#include "server/observability/log.h"
#include "server/tls/openssl_ptr.h"

namespace leasehold::server {
namespace {

using Key = EvpKey;
using Cert = X509Cert;
using Bignum = OpenSslPtr<BIGNUM, BN_free>;
using Extension = OpenSslPtr<X509_EXTENSION, X509_EXTENSION_free>;
using Bio = OpenSslPtr<BIO, BIO_free_all>;

absl::Status OpenSslError(const std::string& what) {
  return absl::InternalError("cannot make a self-signed certificate: " + what);
}

// "host:port", "[v6]:port" or "host" -> host.
std::string HostOf(const std::string& host_port) {
  if (!host_port.empty() && host_port.front() == '[') {
    const size_t close = host_port.find(']');
    return host_port.substr(1, close == std::string::npos ? std::string::npos : close - 1);
  }
  const size_t colon = host_port.find(':');
  return colon == std::string::npos ? host_port : host_port.substr(0, colon);
}

bool IsIpAddress(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

absl::Status AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, cert, cert, nullptr, nullptr, 0);
  Extension extension(X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str()));
  if (!extension || X509_add_ext(cert, extension.get(), -1) != 1)
    return OpenSslError("extension '" + value + "'");
  return absl::OkStatus();
}

absl::Status WritePem(const std::string& path, mode_t mode,
                      const std::function<bool(BIO*)>& write) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || !write(bio.get())) return OpenSslError("PEM encoding of " + path);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  const std::string temporary = path + ".tmp";
  FILE* out = std::fopen(temporary.c_str(), "wb");
  if (out == nullptr) return absl::InternalError("cannot write '" + temporary + "'");
  chmod(temporary.c_str(), mode);
  const bool written =
      std::fwrite(data, 1, static_cast<size_t>(size), out) == static_cast<size_t>(size);
  if (std::fclose(out) != 0 || !written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    return absl::InternalError("cannot write '" + path + "'");
  }
  return absl::OkStatus();
}

absl::Status MakeSelfSignedCert(const std::vector<std::string>& hosts, const std::string& cert_path,
                                const std::string& key_path) {
  Key key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslError("key generation");
  Cert cert(X509_new());
  Bignum serial(BN_new());
  if (!cert || !serial || X509_set_version(cert.get(), 2) != 1 ||
      BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600) == nullptr) {
    return OpenSslError("certificate fields");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>("etcd"), -1, -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(), name) != 1 || X509_set_pubkey(cert.get(), key.get()) != 1) {
    return OpenSslError("certificate names");
  }
  std::set<std::string> names;
  for (const std::string& host : hosts) {
    const std::string h = HostOf(host);
    if (!h.empty()) names.insert((IsIpAddress(h) ? "IP:" : "DNS:") + h);
  }
  for (const auto& [nid, value] :
       {std::pair<int, std::string>{NID_basic_constraints, "critical,CA:FALSE"},
        {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
        {NID_ext_key_usage, "serverAuth,clientAuth"},
        {NID_subject_alt_name, absl::StrJoin(names, ",")}}) {
    if (value.empty()) continue;
    if (absl::Status st = AddExtension(cert.get(), nid, value); !st.ok()) return st;
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return OpenSslError("signature");
  // The key first: a certificate without its key would be taken for a finished pair.
  if (absl::Status st = WritePem(key_path, 0600,
                                 [&](BIO* bio) {
                                   return PEM_write_bio_PrivateKey(bio, key.get(), nullptr, nullptr,
                                                                   0, nullptr, nullptr) == 1;
                                 });
      !st.ok()) {
    return st;
  }
  return WritePem(cert_path, 0644,
                  [&](BIO* bio) { return PEM_write_bio_X509(bio, cert.get()) == 1; });
}

}  // namespace

absl::Status EnsureSelfSignedCert(const std::string& dir, const std::vector<std::string>& hosts,
                                  TlsFiles* files) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::InternalError("cannot make '" + dir + "': " + error.message());
  const std::string cert_path = dir + "/cert.pem", key_path = dir + "/key.pem";
  if (!std::filesystem::exists(cert_path, error) || !std::filesystem::exists(key_path, error)) {
    if (absl::Status st = MakeSelfSignedCert(hosts, cert_path, key_path); !st.ok()) return st;
    LogInfo("made a self-signed certificate",
            {{"cert-file", cert_path}, {"hosts", absl::StrJoin(hosts, ",")}});
  }
  files->cert_file = cert_path;
  files->key_file = key_path;
  files->self_signed = true;
  return absl::OkStatus();
}

}  // namespace leasehold::server
