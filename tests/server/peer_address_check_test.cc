#include "server/peer_address_check.h"

#include <fstream>
#include <iterator>
#include <memory>

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "server/self_signed_cert.h"
#include "storage/temp_dir.h"

namespace leasehold::server {
namespace {

TEST(IpOfGrpcPeerTest, TakesTheAddressOutOfGrpcsPeerName) {
  EXPECT_EQ(IpOfGrpcPeer("ipv4:10.0.0.1:2380"), "10.0.0.1");
  EXPECT_EQ(IpOfGrpcPeer("ipv6:[::1]:2380"), "::1");
  EXPECT_EQ(IpOfGrpcPeer("ipv6:%5B::ffff:10.0.0.1%5D:2380"), "::ffff:10.0.0.1");
  EXPECT_EQ(IpOfGrpcPeer("unix:/tmp/socket"), "");
  EXPECT_EQ(IpOfGrpcPeer("garbage"), "");
}

class CheckCertificateAddressTest : public ::testing::Test {
 protected:
  // A certificate naming `hosts` (IPs as IP SANs, names as DNS SANs).
  std::unique_ptr<X509, void (*)(X509*)> Cert(const std::vector<std::string>& hosts) {
    TlsFiles files;
    EXPECT_TRUE(EnsureSelfSignedCert(dir_.Sub(std::to_string(made_++)), hosts, &files).ok());
    std::ifstream in(files.cert_file);
    std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::unique_ptr<BIO, int (*)(BIO*)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
    return {PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free};
  }
  static std::vector<std::string> Resolve(const std::string& name) {
    if (name == "node.example") return {"10.0.0.5", "fd00::5"};
    return {};
  }

  testing::TempDir dir_;
  int made_ = 0;
};

TEST_F(CheckCertificateAddressTest, AnIpNamedInTheCertificate) {
  auto cert = Cert({"127.0.0.2", "10.0.0.9"});
  EXPECT_TRUE(CheckCertificateAddress(cert.get(), "10.0.0.9", Resolve).ok());
  EXPECT_TRUE(CheckCertificateAddress(cert.get(), "::ffff:127.0.0.2", Resolve).ok());  // the same address
  absl::Status refused = CheckCertificateAddress(cert.get(), "127.0.0.1", Resolve);
  EXPECT_TRUE(absl::IsPermissionDenied(refused));
  EXPECT_EQ(std::string(refused.message()), "x509: certificate is valid for 10.0.0.9, 127.0.0.2, not 127.0.0.1");
}

TEST_F(CheckCertificateAddressTest, ADnsNameThatResolvesToTheAddress) {
  auto cert = Cert({"node.example", "other.example"});
  EXPECT_TRUE(CheckCertificateAddress(cert.get(), "10.0.0.5", Resolve).ok());
  EXPECT_TRUE(CheckCertificateAddress(cert.get(), "fd00::5", Resolve).ok());
  absl::Status refused = CheckCertificateAddress(cert.get(), "10.0.0.6", Resolve);
  EXPECT_TRUE(absl::IsPermissionDenied(refused));
  EXPECT_EQ(std::string(refused.message()), "tls: \"10.0.0.6\" does not match any of DNSNames [\"node.example\" \"other.example\"]");
}

TEST_F(CheckCertificateAddressTest, IpsFirstThenNames) {
  auto cert = Cert({"10.0.0.9", "node.example"});
  EXPECT_TRUE(CheckCertificateAddress(cert.get(), "10.0.0.9", Resolve).ok());
  EXPECT_TRUE(CheckCertificateAddress(cert.get(), "10.0.0.5", Resolve).ok());  // by its name
  EXPECT_TRUE(absl::IsPermissionDenied(CheckCertificateAddress(cert.get(), "10.0.0.7", Resolve)));
}

}  // namespace
}  // namespace leasehold::server
