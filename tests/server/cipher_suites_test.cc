#include "server/tls/cipher_suites.h"

#include "gtest/gtest.h"

namespace leasehold::server {
namespace {

TEST(CipherSuitesTest, GoNamesBecomeOpenSslsInOrder) {
  auto list = OpenSslCipherList(
      {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(*list, "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384");
}

TEST(CipherSuitesTest, GosOlderChaChaNamesAreAliases) {
  auto alias = OpenSslCipherList({"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"});
  auto standard = OpenSslCipherList({"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"});
  ASSERT_TRUE(alias.ok() && standard.ok());
  EXPECT_EQ(*alias, "ECDHE-RSA-CHACHA20-POLY1305");
  EXPECT_EQ(*alias, *standard);
  auto both = OpenSslCipherList(
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(*both, "ECDHE-RSA-CHACHA20-POLY1305");
}

TEST(CipherSuitesTest, TlsThirteenSuitesAreAcceptedAndLeftOn) {
  auto list =
      OpenSslCipherList({"TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, "ECDHE-RSA-AES128-GCM-SHA256");
  // Alone they leave nothing to restrict TLS 1.2 to.
  EXPECT_EQ(OpenSslCipherList({"TLS_AES_128_GCM_SHA256"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CipherSuitesTest, AnUnknownNameIsEtcdsError) {
  auto list = OpenSslCipherList({"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_BOGUS"});
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().message(), "unexpected TLS cipher suite \"TLS_BOGUS\"");
  // OpenSSL's own names are not Go's.
  EXPECT_FALSE(OpenSslCipherList({"ECDHE-RSA-AES128-GCM-SHA256"}).ok());
}

TEST(CipherSuitesTest, HttpTwoWantsAnEcdheAes128GcmSuite) {
  EXPECT_TRUE(CheckHttp2CipherSuites({"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}).ok());
  EXPECT_TRUE(CheckHttp2CipherSuites(
                  {"TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"})
                  .ok());
  absl::Status missing = CheckHttp2CipherSuites({"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"});
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("missing an HTTP/2-required AES_128_GCM_SHA256 cipher"),
            std::string::npos);
}

}  // namespace
}  // namespace leasehold::server
