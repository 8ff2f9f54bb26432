#include "server/http/client_port_http.h"

#include "gtest/gtest.h"

namespace leasehold::server {
namespace {

TEST(ClientPortHttpTest, HostOfHeaderDropsThePortAsGoDoes) {
  EXPECT_EQ(HostOfHeader("example.com:2379"), "example.com");
  EXPECT_EQ(HostOfHeader("example.com"), "example.com");
  EXPECT_EQ(HostOfHeader("[::1]:2379"), "::1");
  EXPECT_EQ(HostOfHeader("host:"), "host");
  EXPECT_EQ(HostOfHeader(":2379"), "");
  // Not host:port: left whole.
  EXPECT_EQ(HostOfHeader("[::1]"), "[::1]");
  EXPECT_EQ(HostOfHeader("::1"), "::1");
  EXPECT_EQ(HostOfHeader("a:b:c"), "a:b:c");
  EXPECT_EQ(HostOfHeader("[::1]x"), "[::1]x");
  EXPECT_EQ(HostOfHeader("[::1"), "[::1");
  EXPECT_EQ(HostOfHeader(""), "");
}

TEST(ClientPortHttpTest, WhitelistIsExactUnlessEmptyOrStar) {
  EXPECT_TRUE(HostWhitelisted({}, "anything"));
  EXPECT_TRUE(HostWhitelisted({"*"}, "anything"));
  EXPECT_TRUE(HostWhitelisted({"example.com", "*"}, "evil.com"));
  EXPECT_TRUE(HostWhitelisted({"example.com", "localhost"}, "localhost"));
  EXPECT_FALSE(HostWhitelisted({"example.com"}, "EXAMPLE.com"));  // as etcd's: no case folding
  EXPECT_FALSE(HostWhitelisted({"example.com"}, "example.com.evil"));
  EXPECT_FALSE(HostWhitelisted({"example.com"}, ""));
}

}  // namespace
}  // namespace leasehold::server
