// Flag parsing: etcd's spellings, both value forms, and clear refusals.
#include "server/command/flags.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace leasehold::server {
namespace {

absl::StatusOr<Flags> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "leasehold");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseFlags(static_cast<int>(argv.size()), argv.data());
}

// Sets an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* key, const char* value) : key_(key) { setenv(key, value, 1); }
  ~ScopedEnv() { unsetenv(key_); }

 private:
  const char* key_;
};

TEST(FlagsTest, EtcdEnvironmentVariablesSetFlagsNotGiven) {
  ScopedEnv name("ETCD_NAME", "infra1");
  ScopedEnv ticks("ETCD_INITIAL_ELECTION_TICK_ADVANCE", "FALSE");
  ScopedEnv urls("ETCD_LISTEN_CLIENT_URLS", "http://127.0.0.1:1,http://127.0.0.1:2");
  ScopedEnv unknown("ETCD_NO_SUCH_FLAG", "x");  // warned of, not refused
  auto flags = Parse({"--data-dir=/tmp/x"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->name, "infra1");
  EXPECT_FALSE(flags->initial_election_tick_advance);
  EXPECT_EQ(flags->listen_client_urls.size(), 2u);
}

TEST(FlagsTest, AnEnvironmentVariableShadowedByItsFlagOrWithABadValueIsRefused) {
  {
    ScopedEnv name("ETCD_NAME", "infra1");
    auto flags = Parse({"--name", "n1"});
    ASSERT_FALSE(flags.ok());
    EXPECT_EQ(flags.status().message(),
              "conflicting environment variable \"ETCD_NAME\" is shadowed by corresponding "
              "command-line flag (either unset environment variable or disable flag)");
  }
  ScopedEnv interval("ETCD_HEARTBEAT_INTERVAL", "abc");
  auto flags = Parse({});
  ASSERT_FALSE(flags.ok());
  EXPECT_EQ(flags.status().message(), "invalid value \"abc\" for ETCD_HEARTBEAT_INTERVAL");
}

TEST(FlagsTest, DefaultsAndBothForms) {
  auto flags = Parse({"--name", "n1", "--data-dir=/tmp/x",
                      "--listen-client-urls=http://127.0.0.1:1,http://127.0.0.1:2"});
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
  EXPECT_FALSE(Parse({"--experimental-corrupt-check-time=500us"}).ok());  // would round to 0, off
  EXPECT_FALSE(Parse({"--experimental-corrupt-check-time=inf"}).ok());
}

TEST(FlagsTest, EtcdsLoggingRaftAndCompactionFlags) {
  auto flags = Parse({"--logger=zap", "--log-outputs=stdout,/tmp/x.log", "--debug",
                      "--pre-vote=false", "--enable-v2=false", "--auto-compaction-mode=revision",
                      "--auto-compaction-retention=1000"});
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
  ASSERT_EQ(flags->ineffective_flags.size(), 2u);
  EXPECT_EQ(flags->ineffective_flags[0].first, "max-snapshots");
  EXPECT_EQ(flags->ineffective_flags[1].first, "max-wals");
  EXPECT_NE(flags->ineffective_flags[1].second.find("RocksDB"), std::string::npos);
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
  EXPECT_EQ(Parse({"--experimental-compaction-batch-limit=1000"})->ineffective_flags.size(), 1u);
  EXPECT_FALSE(Parse({"--experimental-compaction-batch-limit=0"}).ok());
  EXPECT_TRUE(Parse({"--log-package-levels="})->ineffective_flags.empty());
  EXPECT_EQ(Parse({"--log-package-levels=etcdserver=DEBUG"})->ineffective_flags.size(), 1u);
  EXPECT_FALSE(Parse({})->peer_tls.skip_client_san_verify);
  EXPECT_TRUE(
      Parse({"--experimental-peer-skip-client-san-verification"})->peer_tls.skip_client_san_verify);
}

TEST(FlagsTest, FeaturesNotServedAreAcceptedOnlyOff) {
  // Their defaults ask for nothing; settings that act only with them are checked and accepted.
  auto off =
      Parse({"--discovery=", "--discovery-srv=", "--discovery-fallback=proxy",
             "--discovery-proxy=", "--discovery-srv-name=", "--proxy=off",
             "--proxy-failure-wait=5000", "--proxy-read-timeout=0", "--experimental-enable-v2v3="});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_TRUE(off->unserved.empty());
  EXPECT_FALSE(Parse({"--discovery-fallback=retry"}).ok());
  EXPECT_FALSE(Parse({"--proxy=maybe"}).ok());
  EXPECT_FALSE(Parse({"--proxy-dial-timeout=-5"}).ok());
  // Asked for: parsed, and the start is refused with the reason (main.cc).
  auto on = Parse(
      {"--discovery=https://discovery.etcd.io/x", "--proxy=on", "--experimental-enable-v2v3=/v2"});
  ASSERT_TRUE(on.ok()) << on.status();
  ASSERT_EQ(on->unserved.size(), 3u);
  EXPECT_EQ(on->unserved[0],
            "--discovery: etcd's discovery service is not supported: name the members with "
            "--initial-cluster");
  EXPECT_EQ(on->unserved[1], "--proxy: etcd's v2 proxy is not supported (only 'off')");
  EXPECT_EQ(on->unserved[2], "--experimental-enable-v2v3: etcd's v2 API is not served (only v3)");
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
