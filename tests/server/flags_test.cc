// Flag parsing: etcd's spellings, both value forms, and clear refusals.
#include "server/flags.h"

#include <gtest/gtest.h>

namespace leasehold::server {
namespace {

absl::StatusOr<Flags> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "leasehold");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseFlags(static_cast<int>(argv.size()), argv.data());
}

TEST(FlagsTest, DefaultsAndBothForms) {
  auto flags = Parse({"--name", "n1", "--data-dir=/tmp/x", "--listen-client-urls=http://127.0.0.1:1,http://127.0.0.1:2"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->name, "n1");
  EXPECT_EQ(flags->data_dir, "/tmp/x");
  EXPECT_EQ(flags->listen_client_urls.size(), 2u);
  EXPECT_EQ(flags->advertise_client_urls, flags->listen_client_urls);
  EXPECT_EQ(flags->max_request_bytes, 1536 * 1024);
  EXPECT_TRUE(flags->strict_reconfig_check);
  EXPECT_FALSE(Parse({"--strict-reconfig-check=false"})->strict_reconfig_check);
  EXPECT_TRUE(Parse({"--strict-reconfig-check"})->strict_reconfig_check);
}

TEST(FlagsTest, Refusals) {
  EXPECT_EQ(Parse({"--nope"}).status().message(), "unknown flag: --nope");
  EXPECT_EQ(Parse({"--max-request-bytes=abc"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Parse({"--name"}).status().message(), "flag needs a value: --name");
}

TEST(FlagsTest, Urls) {
  EXPECT_EQ(*HostPortOfUrl("http://127.0.0.1:2379"), "127.0.0.1:2379");
  EXPECT_EQ(*HostPortOfUrl("https://127.0.0.1:2379/"), "127.0.0.1:2379");
  EXPECT_FALSE(HostPortOfUrl("ftp://127.0.0.1:2379").ok());
  EXPECT_FALSE(HostPortOfUrl("unix://127.0.0.1:2379").ok());
  EXPECT_FALSE(HostPortOfUrl("http://127.0.0.1").ok());
}

}  // namespace
}  // namespace leasehold::server
