#include "server/auth/jwt_tokens.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "server/command/flags.h"
#include "server/tls/self_signed_cert.h"

namespace leasehold::server {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

class JwtTokensTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jwt-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes a fresh key pair (RSA 2048 or EC P-256) as NAME.key and NAME.pub; returns the base path.
  std::string MakeKeys(const std::string& name, bool rsa) {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
        rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256"), EVP_PKEY_free);
    const std::string base = dir_ + "/" + name;
    std::unique_ptr<BIO, decltype(&BIO_free)> priv(BIO_new_file((base + ".key").c_str(), "w"),
                                                   BIO_free);
    std::unique_ptr<BIO, decltype(&BIO_free)> pub(BIO_new_file((base + ".pub").c_str(), "w"),
                                                  BIO_free);
    EXPECT_EQ(
        PEM_write_bio_PrivateKey(priv.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr), 1);
    EXPECT_EQ(PEM_write_bio_PUBKEY(pub.get(), key.get()), 1);
    return base;
  }

  std::unique_ptr<JwtTokens> Load(const std::string& method, const std::string& public_file,
                                  const std::string& private_file,
                                  absl::Duration ttl = absl::Minutes(5)) {
    JwtOptions options;
    options.sign_method = method;
    options.public_key_file = public_file;
    options.private_key_file = private_file;
    options.ttl = ttl;
    auto tokens = JwtTokens::Load(options);
    EXPECT_TRUE(tokens.ok()) << tokens.status();
    return tokens.ok() ? *std::move(tokens) : nullptr;
  }

  std::string dir_;
};

TEST_F(JwtTokensTest, EachSignMethodSignsWhatItVerifies) {
  const std::string rsa = MakeKeys("rsa", true), ec = MakeKeys("ec", false);
  for (const auto& [method, base] : {std::pair<std::string, std::string>{"RS256", rsa},
                                     {"RS512", rsa},
                                     {"PS256", rsa},
                                     {"ES256", ec}}) {
    SCOPED_TRACE(method);
    auto tokens = Load(method, base + ".pub", base + ".key");
    ASSERT_NE(tokens, nullptr);
    absl::StatusOr<std::string> token = tokens->Sign("alice", 7, kNow);
    ASSERT_TRUE(token.ok()) << token.status();
    std::vector<std::string> parts = absl::StrSplit(*token, '.');
    ASSERT_EQ(parts.size(), 3u);
    std::string header;
    ASSERT_TRUE(absl::WebSafeBase64Unescape(parts[0], &header));
    EXPECT_NE(header.find("\"alg\":\"" + method + "\""), std::string::npos) << header;
    std::optional<JwtTokens::Claims> claims = tokens->Verify(*token, kNow + absl::Minutes(4));
    ASSERT_TRUE(claims.has_value());
    EXPECT_EQ(claims->user, "alice");
    EXPECT_EQ(claims->revision, 7u);
  }
}

TEST_F(JwtTokensTest, ExpiredTamperedForeignOrUnsignedTokensAreRefused) {
  const std::string base = MakeKeys("rsa", true), other = MakeKeys("other", true);
  auto tokens = Load("RS256", base + ".pub", base + ".key", absl::Seconds(1));
  auto foreign = Load("RS256", other + ".pub", other + ".key");
  const std::string token = *tokens->Sign("alice", 3, kNow);
  EXPECT_TRUE(tokens->Verify(token, kNow + absl::Seconds(1)).has_value());
  EXPECT_FALSE(tokens->Verify(token, kNow + absl::Seconds(2)).has_value()) << "expired";

  std::vector<std::string> parts = absl::StrSplit(token, '.');
  const std::string bob_claims =
      absl::WebSafeBase64Escape(R"({"exp":1900000000,"revision":3,"username":"bob"})");
  EXPECT_FALSE(tokens->Verify(parts[0] + "." + bob_claims + "." + parts[2], kNow).has_value())
      << "claims changed";
  std::string signature = parts[2];
  signature[5] = signature[5] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(tokens->Verify(parts[0] + "." + parts[1] + "." + signature, kNow).has_value())
      << "signature changed";
  EXPECT_FALSE(tokens->Verify(*foreign->Sign("alice", 3, kNow), kNow).has_value())
      << "another key's";
  const std::string none = absl::WebSafeBase64Escape(R"({"alg":"none","typ":"JWT"})");
  EXPECT_FALSE(tokens->Verify(none + "." + parts[1] + ".", kNow).has_value()) << "alg none";
  EXPECT_FALSE(tokens->Verify("", kNow).has_value());
  EXPECT_FALSE(tokens->Verify("a.b", kNow).has_value());
  EXPECT_FALSE(tokens->Verify("not-base64!.x.y", kNow).has_value());
  EXPECT_FALSE(tokens->Verify("abcdefghijklmnop.42", kNow).has_value()) << "a simple token";
}

TEST_F(JwtTokensTest, ACertificateServesAsThePublicKeyAndAMemberWithoutThePrivateKeyOnlyVerifies) {
  TlsFiles files;  // an ECDSA P-256 key and its certificate
  ASSERT_TRUE(EnsureSelfSignedCert(dir_ + "/cert", {"127.0.0.1:2379"}, &files).ok());
  auto signer = Load("ES256", files.cert_file, files.key_file);
  auto verifier = Load("ES256", files.cert_file, "");
  ASSERT_NE(signer, nullptr);
  ASSERT_NE(verifier, nullptr);
  const std::string token = *signer->Sign("root", 1, kNow);
  std::optional<JwtTokens::Claims> claims = verifier->Verify(token, kNow);
  ASSERT_TRUE(claims.has_value());
  EXPECT_EQ(claims->user, "root");
  EXPECT_TRUE(absl::IsFailedPrecondition(verifier->Sign("root", 1, kNow).status()));
}

TEST_F(JwtTokensTest, KeysMustMatchTheSignMethod) {
  const std::string rsa = MakeKeys("rsa", true), ec = MakeKeys("ec", false);
  JwtOptions options;
  options.sign_method = "ES256";
  options.public_key_file = rsa + ".pub";
  EXPECT_TRUE(absl::IsInvalidArgument(JwtTokens::Load(options).status()));
  options.sign_method = "RS256";
  options.public_key_file = rsa + ".pub";
  options.private_key_file = ec + ".key";
  EXPECT_TRUE(absl::IsInvalidArgument(JwtTokens::Load(options).status()));
  options.private_key_file = dir_ + "/missing.key";
  EXPECT_TRUE(absl::IsInvalidArgument(JwtTokens::Load(options).status()));
}

TEST(JwtOptionsTest, ParsesEtcdsFlag) {
  absl::StatusOr<JwtOptions> options =
      ParseJwtOptions("jwt,pub-key=a.crt,priv-key=a.key,sign-method=RS256,ttl=1s");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->public_key_file, "a.crt");
  EXPECT_EQ(options->private_key_file, "a.key");
  EXPECT_EQ(options->sign_method, "RS256");
  EXPECT_EQ(options->ttl, absl::Seconds(1));
  EXPECT_EQ(ParseJwtOptions("jwt,pub-key=a.crt,sign-method=ES384")->ttl, absl::Minutes(5));
  EXPECT_FALSE(ParseJwtOptions("jwt").ok());
  EXPECT_FALSE(ParseJwtOptions("jwt,pub-key=a.crt").ok()) << "no sign-method";
  EXPECT_FALSE(ParseJwtOptions("jwt,sign-method=RS256").ok()) << "no public key";
  EXPECT_FALSE(ParseJwtOptions("jwt,pub-key=a,sign-method=HS256").ok()) << "unsupported method";
  EXPECT_FALSE(ParseJwtOptions("jwt,pub-key=a,sign-method=RS256,ttl=soon").ok());
  EXPECT_FALSE(ParseJwtOptions("jwt,pub-key=a,sign-method=RS256,colour=blue").ok());
}

}  // namespace
}  // namespace leasehold::server
