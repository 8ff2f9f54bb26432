#include "server/tls/self_signed_cert.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "gtest/gtest.h"
#include "server/command/tls_flags.h"

namespace leasehold::server {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct Parsed {
  std::unique_ptr<X509, decltype(&X509_free)> cert{nullptr, X509_free};
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{nullptr, EVP_PKEY_free};
};

Parsed Parse(const TlsFiles& files) {
  Parsed parsed;
  const std::string cert = Slurp(files.cert_file), key = Slurp(files.key_file);
  std::unique_ptr<BIO, decltype(&BIO_free)> cert_bio(
      BIO_new_mem_buf(cert.data(), static_cast<int>(cert.size())), BIO_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(
      BIO_new_mem_buf(key.data(), static_cast<int>(key.size())), BIO_free);
  parsed.cert.reset(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  parsed.key.reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  return parsed;
}

class SelfSignedCertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/self-signed-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(SelfSignedCertTest, NamesTheHostsAndSignsItself) {
  TlsFiles files;
  ASSERT_TRUE(EnsureSelfSignedCert(dir_ + "/fixtures/peer",
                                   {"127.0.0.1:2380", "localhost:2381", "[::1]:2382"}, &files)
                  .ok());
  EXPECT_EQ(files.cert_file, dir_ + "/fixtures/peer/cert.pem");
  EXPECT_EQ(files.key_file, dir_ + "/fixtures/peer/key.pem");
  EXPECT_TRUE(files.self_signed);

  Parsed parsed = Parse(files);
  ASSERT_NE(parsed.cert, nullptr);
  ASSERT_NE(parsed.key, nullptr);
  EXPECT_EQ(X509_check_private_key(parsed.cert.get(), parsed.key.get()), 1);
  EXPECT_EQ(X509_verify(parsed.cert.get(), parsed.key.get()), 1) << "signed by its own key";
  EXPECT_EQ(X509_check_ip_asc(parsed.cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(parsed.cert.get(), "::1", 0), 1);
  EXPECT_EQ(X509_check_host(parsed.cert.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_ip_asc(parsed.cert.get(), "10.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_purpose(parsed.cert.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(X509_check_purpose(parsed.cert.get(), X509_PURPOSE_SSL_CLIENT, 0), 1);
  int days = 0, seconds = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(parsed.cert.get()),
                           X509_get0_notAfter(parsed.cert.get())),
            1);
  EXPECT_EQ(days, 365);

  struct stat key_stat {};
  ASSERT_EQ(stat(files.key_file.c_str(), &key_stat), 0);
  EXPECT_EQ(key_stat.st_mode & 0777, 0600u);
}

TEST_F(SelfSignedCertTest, KeepsThePairItMadeBefore) {
  TlsFiles first, second;
  ASSERT_TRUE(EnsureSelfSignedCert(dir_, {"127.0.0.1:2379"}, &first).ok());
  const std::string cert = Slurp(first.cert_file), key = Slurp(first.key_file);
  ASSERT_TRUE(EnsureSelfSignedCert(dir_, {"127.0.0.1:2379"}, &second).ok());
  EXPECT_EQ(Slurp(second.cert_file), cert);
  EXPECT_EQ(Slurp(second.key_file), key);
}

TEST_F(SelfSignedCertTest, AHalfPairIsMadeAfresh) {
  TlsFiles files;
  ASSERT_TRUE(EnsureSelfSignedCert(dir_, {"127.0.0.1:2379"}, &files).ok());
  const std::string cert = Slurp(files.cert_file);
  std::filesystem::remove(files.key_file);
  ASSERT_TRUE(EnsureSelfSignedCert(dir_, {"127.0.0.1:2379"}, &files).ok());
  EXPECT_NE(Slurp(files.cert_file), cert);
  Parsed parsed = Parse(files);
  ASSERT_NE(parsed.key, nullptr);
  EXPECT_EQ(X509_check_private_key(parsed.cert.get(), parsed.key.get()), 1);
}

TEST_F(SelfSignedCertTest, AutoTlsFillsOnlyPortsWithoutCertificates) {
  Flags flags;
  flags.data_dir = dir_;
  flags.auto_tls = true;
  flags.peer_auto_tls = true;
  flags.listen_client_urls = {"https://127.0.0.1:2379"};
  flags.listen_peer_urls = {"https://127.0.0.1:2380"};
  flags.client_tls.cert_file = "/given/server.crt";
  flags.client_tls.key_file = "/given/server.key";
  ASSERT_TRUE(ApplyAutoTls(&flags).ok());
  EXPECT_EQ(flags.client_tls.cert_file, "/given/server.crt");
  EXPECT_FALSE(flags.client_tls.self_signed);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/fixtures/client"));
  EXPECT_EQ(flags.peer_tls.cert_file, dir_ + "/fixtures/peer/cert.pem");
  EXPECT_TRUE(flags.peer_tls.self_signed);
}

TEST_F(SelfSignedCertTest, WithoutTheFlagsNothingIsMade) {
  Flags flags;
  flags.data_dir = dir_;
  ASSERT_TRUE(ApplyAutoTls(&flags).ok());
  EXPECT_TRUE(flags.client_tls.cert_file.empty());
  EXPECT_TRUE(flags.peer_tls.cert_file.empty());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/fixtures"));
}

}  // namespace
}  // namespace leasehold::server
