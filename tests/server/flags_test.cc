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
  EXPECT_FALSE(flags->force_new_cluster);
  EXPECT_TRUE(Parse({"--force-new-cluster"})->force_new_cluster);
  EXPECT_FALSE(Parse({"--force-new-cluster=false"})->force_new_cluster);
  EXPECT_FALSE(Parse({"--force-new-cluster=maybe"}).ok());
  EXPECT_EQ(flags->corrupt_check_ms, 0);
  EXPECT_EQ(Parse({"--experimental-corrupt-check-time=4h"})->corrupt_check_ms, 4 * 3600 * 1000);
  EXPECT_FALSE(Parse({"--experimental-corrupt-check-time=-1s"}).ok());
  EXPECT_FALSE(Parse({"--experimental-corrupt-check-time=often"}).ok());
}

TEST(FlagsTest, EtcdsLoggingRaftAndCompactionFlags) {
  auto flags = Parse({"--logger=zap", "--log-outputs=stdout,/tmp/x.log", "--debug", "--pre-vote=false",
                      "--enable-v2=false", "--auto-compaction-mode=revision", "--auto-compaction-retention=1000"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->log_outputs, (std::vector<std::string>{"stdout", "/tmp/x.log"}));
  EXPECT_EQ(flags->log_level, "debug");
  EXPECT_FALSE(flags->pre_vote);
  EXPECT_FALSE(flags->enable_v2);
  EXPECT_EQ(flags->auto_compaction_mode, "revision");
  EXPECT_EQ(flags->auto_compaction_retention, "1000");
  EXPECT_TRUE(Parse({})->pre_vote);
  EXPECT_EQ(Parse({})->log_outputs, std::vector<std::string>{"default"});
  EXPECT_TRUE(Parse({"--enable-v2"})->enable_v2);  // parsed; refused at start (main.cc)
  EXPECT_FALSE(Parse({"--logger=glog"}).ok());
  EXPECT_EQ(Parse({"--debug=false"})->log_level, "info");
}

TEST(FlagsTest, EtcdsFlagsWithNothingToActOnAreAcceptedAndNamed) {
  auto flags = Parse({"--max-snapshots=5", "--max-wals", "0", "--enable-pprof=false"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->ineffective_flags, (std::vector<std::string>{"max-snapshots", "max-wals"}));
  EXPECT_FALSE(flags->enable_pprof);
  EXPECT_TRUE(Parse({})->ineffective_flags.empty());
  EXPECT_FALSE(Parse({"--max-wals=-1"}).ok());
  EXPECT_TRUE(Parse({"--enable-pprof"})->enable_pprof);  // parsed; refused at start (main.cc)
  auto bbolt = Parse({"--backend-batch-interval=100ms", "--backend-batch-limit=10000",
                      "--experimental-backend-bbolt-freelist-type=map"});
  ASSERT_TRUE(bbolt.ok()) << bbolt.status();
  EXPECT_EQ(bbolt->ineffective_flags.size(), 3u);
  EXPECT_FALSE(Parse({"--experimental-backend-bbolt-freelist-type=tree"}).ok());
  EXPECT_FALSE(Parse({"--backend-batch-interval=soon"}).ok());
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
