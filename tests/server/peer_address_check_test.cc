#include "server/tls/peer_address_check.h"

#include <fstream>
#include <iterator>
#include <memory>

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "server/tls/self_signed_cert.h"
#include "storage/temp_dir.h"

namespace leasehold::server {
namespace {

class CheckCertificateAddressTest : public ::testing::Test {
 protected:
  // A certificate naming `hosts` (IPs as IP SANs, names as DNS SANs); null when it cannot be made.
  std::unique_ptr<X509, void (*)(X509*)> Cert(const std::vector<std::string>& hosts) {
    TlsFiles files;
    if (!EnsureSelfSignedCert(dir_.Sub(std::to_string(made_++)), hosts, &files).ok())
      return {nullptr, X509_free};
    std::ifstream in(files.cert_file);
    std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::unique_ptr<BIO, int (*)(BIO*)> bio(
        BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
    return {PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free};
  }

  testing::TempDir dir_;
  int made_ = 0;
};

TEST_F(CheckCertificateAddressTest, AnIpNamedInTheCertificate) {
  auto cert = Cert({"127.0.0.2", "10.0.0.9"});
  ASSERT_NE(cert, nullptr);
  EXPECT_TRUE(CheckCertificateAddress(cert.get(), "10.0.0.9").ok());
  EXPECT_TRUE(CheckCertificateAddress(cert.get(), "::ffff:127.0.0.2").ok());  // the same address
  absl::Status refused = CheckCertificateAddress(cert.get(), "127.0.0.1");
  EXPECT_TRUE(absl::IsPermissionDenied(refused));
  EXPECT_EQ(std::string(refused.message()),
            "x509: certificate is valid for 10.0.0.9, 127.0.0.2, not 127.0.0.1");
}

TEST_F(CheckCertificateAddressTest, ACertificateWithDnsNamesOrNoNamesPasses) {
  // etcd would look its DNS names up; that half of the check is not made here.
  auto named = Cert({"10.0.0.9", "node.example"});
  ASSERT_NE(named, nullptr);
  EXPECT_TRUE(CheckCertificateAddress(named.get(), "10.0.0.7").ok());
  auto dns_only = Cert({"node.example"});
  ASSERT_NE(dns_only, nullptr);
  EXPECT_TRUE(CheckCertificateAddress(dns_only.get(), "10.0.0.7").ok());
  auto unnamed = Cert({});
  ASSERT_NE(unnamed, nullptr);
  EXPECT_TRUE(CheckCertificateAddress(unnamed.get(), "10.0.0.7").ok());
}

}  // namespace
}  // namespace leasehold::server
