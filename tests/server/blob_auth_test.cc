// SharedKey verification, lease-id GUID forms and request target parsing of the blob adapter.
#include "server/blob/blob_auth.h"

#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "server/blob/blob_format.h"
#include "server/blob/blob_request_parser.h"
#include "server/blob/guid.h"

namespace leasehold::server {
namespace {

TEST(GuidTest, EveryDotNetFormNamesTheSameLease) {
  const std::string canonical = "1f812371-a41d-49e6-b123-f4b542e851c5";
  for (const char* form :
       {"1f812371-a41d-49e6-b123-f4b542e851c5", "1F812371-A41D-49E6-B123-F4B542E851C5",
        "1f812371a41d49e6b123f4b542e851c5", "{1f812371-a41d-49e6-b123-f4b542e851c5}",
        "(1F812371-a41d-49e6-b123-f4b542e851c5)"}) {
    EXPECT_EQ(CanonicalGuid(form), canonical) << form;
  }
  for (const char* bad :
       {"", "notaguid", "1f812371-a41d-49e6-b123-f4b542e851c",
        "1f812371a41d-49e6-b123-f4b542e851c5x", "{1f812371-a41d-49e6-b123-f4b542e851c5)",
        "1f812371-a41d-49e6-b123-f4b542e851cg"}) {
    EXPECT_FALSE(CanonicalGuid(bad).has_value()) << bad;
  }
  const std::string fresh = NewGuid();
  EXPECT_EQ(CanonicalGuid(fresh), fresh);
  EXPECT_NE(NewGuid(), fresh);
}

TEST(BlobTargetTest, SplitsAccountContainerAndBlobAndDecodes) {
  auto t =
      ParseBlobTarget("/devstoreaccount1/c1/dir/b%20b.txt?comp=lease&restype=container&x=a%2Cb");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->account, "devstoreaccount1");
  EXPECT_EQ(t->container, "c1");
  EXPECT_EQ(t->blob, "dir/b b.txt");
  EXPECT_EQ(t->raw_path, "/devstoreaccount1/c1/dir/b%20b.txt");
  EXPECT_EQ(t->Param("comp"), "lease");
  EXPECT_EQ(t->Param("x"), "a,b");
  EXPECT_FALSE(ParseBlobTarget("/devstoreaccount1/c1/b%zz").has_value());
  EXPECT_FALSE(ParseBlobTarget("no-slash").has_value());
}

class SharedKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto verifier =
        SharedKeyVerifier::Create({{std::string(kDevAccountName), std::string(kDevAccountKey)}});
    ASSERT_TRUE(verifier.ok());
    verifier_ = std::make_unique<SharedKeyVerifier>(std::move(*verifier));
  }

  HttpRequest Signed(int64_t date_ms, const std::string& key = std::string(kDevAccountKey)) {
    HttpRequest request{boost::beast::http::verb::put, "/devstoreaccount1/c1/b?comp=lease", 11};
    request.set("x-ms-date", blobfmt::HttpDate(date_ms));
    request.set("x-ms-version", "2026-04-06");
    request.set("x-ms-lease-action", "acquire");
    request.set("Content-Length", "0");
    auto target = ParseBlobTarget("/devstoreaccount1/c1/b?comp=lease");
    std::string decoded;
    absl::Base64Unescape(key, &decoded);
    const std::string to_sign = SharedKeyVerifier::StringToSign(
        request, "devstoreaccount1", target->raw_path, target->query, SigningForm{});
    request.set("Authorization", "SharedKey devstoreaccount1:" + SignHmacSha256(decoded, to_sign));
    return request;
  }

  absl::Status Verify(const HttpRequest& request, int64_t now_ms) {
    auto target = ParseBlobTarget(std::string(request.target()));
    return verifier_->Verify(request, target->account, target->raw_path, target->query, now_ms);
  }

  std::unique_ptr<SharedKeyVerifier> verifier_;
  const int64_t now_ = 1'795'000'000'000;
};

TEST_F(SharedKeyTest, StringToSignFollowsAzuresLayout) {
  HttpRequest request = Signed(now_);
  const std::string s = SharedKeyVerifier::StringToSign(
      request, "devstoreaccount1", "/devstoreaccount1/c1/b", {{"comp", "lease"}}, SigningForm{});
  // Verb, eleven standard headers (all empty; Content-Length 0 counts as empty), x-ms-* headers
  // sorted, then the resource with the account twice (path-style) and the query.
  EXPECT_EQ(s, "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:" + blobfmt::HttpDate(now_) +
                   "\nx-ms-lease-action:acquire\nx-ms-version:2026-04-06\n/devstoreaccount1/"
                   "devstoreaccount1/c1/b\ncomp:lease");
}

TEST_F(SharedKeyTest, AcceptsAGoodSignatureAndRefusesEverythingElse) {
  EXPECT_TRUE(Verify(Signed(now_), now_).ok());
  // Wrong key.
  EXPECT_TRUE(absl::IsPermissionDenied(Verify(Signed(now_, "a2V5"), now_)));
  // Tampered after signing.
  HttpRequest tampered = Signed(now_);
  tampered.set("x-ms-lease-action", "break");
  EXPECT_TRUE(absl::IsPermissionDenied(Verify(tampered, now_)));
  // Stale or future date.
  EXPECT_TRUE(absl::IsPermissionDenied(Verify(Signed(now_ - 16 * 60 * 1000), now_)));
  EXPECT_TRUE(absl::IsPermissionDenied(Verify(Signed(now_ + 16 * 60 * 1000), now_)));
  // Missing header, other scheme, other account.
  HttpRequest missing = Signed(now_);
  missing.erase("Authorization");
  EXPECT_TRUE(absl::IsPermissionDenied(Verify(missing, now_)));
  HttpRequest bearer = Signed(now_);
  bearer.set("Authorization", "Bearer abc");
  EXPECT_TRUE(absl::IsPermissionDenied(Verify(bearer, now_)));
  HttpRequest other = Signed(now_);
  other.set("Authorization", "SharedKey someoneelse:abc");
  EXPECT_TRUE(absl::IsPermissionDenied(Verify(other, now_)));
}

TEST_F(SharedKeyTest, CultureOrderPutsUnderscoreBeforeDigitsAndIgnoresHyphens) {
  HttpRequest request{boost::beast::http::verb::get, "/devstoreaccount1/c1", 11};
  request.set("x-ms-meta-a1", "1");
  request.set("x-ms-meta-a_b", "2");
  request.set("x-ms-version", "2026-04-06");
  SigningForm culture;
  culture.culture_order = true;
  const std::string bytes =
      SharedKeyVerifier::StringToSign(request, "a", "/a/c1", {}, SigningForm{});
  const std::string dotnet = SharedKeyVerifier::StringToSign(request, "a", "/a/c1", {}, culture);
  EXPECT_LT(bytes.find("x-ms-meta-a1"), bytes.find("x-ms-meta-a_b"));
  EXPECT_LT(dotnet.find("x-ms-meta-a_b"), dotnet.find("x-ms-meta-a1"));
}

TEST_F(SharedKeyTest, OldVersionsSignAZeroContentLength) {
  HttpRequest request = Signed(now_);
  request.set("x-ms-version", "2014-02-14");
  const std::string s = SharedKeyVerifier::StringToSign(request, "a", "/a/c1/b", {}, SigningForm{});
  EXPECT_EQ(s.rfind("PUT\n\n\n0\n", 0), 0u) << s;
}

TEST_F(SharedKeyTest, RefusesAKeyThatIsNotBase64) {
  EXPECT_FALSE(SharedKeyVerifier::Create({{"acct", "!!!"}}).ok());
}

}  // namespace
}  // namespace leasehold::server
