// bcrypt password hashing and the simple-token store.
#include <gtest/gtest.h>

#include "server/auth/password.h"
#include "server/auth/token_store.h"

namespace leasehold::server {
namespace {

TEST(PasswordTest, HashesAreSaltedBcryptAndCheckOnlyTheirPassword) {
  auto a = HashPassword("secret", 4);
  auto b = HashPassword("secret", 4);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->starts_with("$2b$04$")) << *a;
  EXPECT_NE(*a, *b);  // a fresh salt each time
  EXPECT_TRUE(PasswordMatches("secret", *a));
  EXPECT_TRUE(PasswordMatches("secret", *b));
  EXPECT_FALSE(PasswordMatches("Secret", *a));
  EXPECT_FALSE(PasswordMatches("", *a));
  auto empty = HashPassword("", 4);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(PasswordMatches("", *empty));
}

TEST(PasswordTest, RefusesBadInput) {
  EXPECT_FALSE(HashPassword("x", 3).ok());
  EXPECT_FALSE(HashPassword("x", 32).ok());
  EXPECT_FALSE(HashPassword(std::string("a\0b", 3), 4).ok());
  EXPECT_FALSE(PasswordMatches("x", ""));
  EXPECT_FALSE(PasswordMatches("x", "not a hash"));
  EXPECT_FALSE(PasswordMatches("x", "$2b$04$short"));
}

TEST(TokenStoreTest, TokensLiveForTheTtlAfterTheirLastUse) {
  TokenStore tokens(absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  tokens.Add("tok", {"alice", "hash", 3}, t0);
  auto used = tokens.Use("tok", t0 + absl::Seconds(9));
  ASSERT_TRUE(used.has_value());
  EXPECT_EQ(used->user, "alice");
  EXPECT_EQ(used->enabled_revision, 3u);
  EXPECT_TRUE(tokens.Use("tok", t0 + absl::Seconds(18)).has_value());  // extended by the use at 9 s
  EXPECT_FALSE(tokens.Use("tok", t0 + absl::Seconds(29)).has_value());
  EXPECT_FALSE(tokens.Use("other", t0).has_value());
}

TEST(TokenStoreTest, ExpiredTokensAreSweptWhenNewOnesArrive) {
  TokenStore tokens(absl::Seconds(1));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 100; ++i) tokens.Add("t" + std::to_string(i), {"u", "h", 1}, t0);
  tokens.Add("late", {"u", "h", 1}, t0 + absl::Seconds(5));
  EXPECT_EQ(tokens.size(), 1u);
}

}  // namespace
}  // namespace leasehold::server
