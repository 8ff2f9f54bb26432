// Flag parsing: etcd's spellings, both value forms, and clear refusals.
#include "server/command/flags.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

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

// A configuration file in the test's temporary directory, removed afterwards.
class ConfigFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& yaml) {
    std::ofstream(path_) << yaml;
    return path_;
  }
  void TearDown() override { std::filesystem::remove(path_); }

 private:
  // One file per test and process: ctest runs the cases side by side.
  std::string path_ = ::testing::TempDir() + "/leasehold-flags-test-" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name() + "-" +
                      std::to_string(getpid()) + ".yml";
};

TEST_F(ConfigFileTest, EtcdsKeysWithEtcdsTypesAndTlsBlocks) {
  const std::string path = Write(R"(# etcd.conf.yml as etcd 3.4 documents it
name: 'infra1'
data-dir: /var/lib/etcd
wal-dir:
snapshot-count: 10000
heartbeat-interval: 150
election-timeout: 1500
quota-backend-bytes: -1
listen-client-urls: http://127.0.0.1:1,http://127.0.0.1:2
initial-cluster-state: 'new'
strict-reconfig-check: false
enable-v2: false
proxy: 'off'
proxy-failure-wait: 5000
discovery-fallback: 'proxy'
grpc-keepalive-min-time: 3000000000
watch-progress-notify-interval: 5000000000
max-wals: 5
client-transport-security:
  cert-file: /pki/server.crt
  key-file: /pki/server.key
  client-cert-auth: true
  trusted-ca-file: /pki/ca.crt
  auto-tls: false
peer-transport-security:
  cert-file: /pki/peer.crt
  key-file: /pki/peer.key
  client-cert-auth: yes
  trusted-ca-file:
log-outputs: [stderr, stdout]
cipher-suites:
  - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
lease-revoke-rate: 500
no-such-key: 1
)");
  auto flags = Parse({"--config-file", path});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->config_file, path);
  EXPECT_EQ(flags->name, "infra1");
  EXPECT_EQ(flags->data_dir, "/var/lib/etcd");
  EXPECT_EQ(flags->wal_dir, "");  // empty: the default
  EXPECT_EQ(flags->heartbeat_interval_ms, 150);
  EXPECT_EQ(flags->election_timeout_ms, 1500);
  EXPECT_EQ(flags->quota_backend_bytes, -1);
  EXPECT_EQ(flags->listen_client_urls.size(), 2u);
  EXPECT_FALSE(flags->strict_reconfig_check);
  EXPECT_EQ(flags->grpc_keepalive_min_time_ms, 3000);  // integer nanoseconds, as Go's Duration
  EXPECT_EQ(flags->watch_progress_notify_interval_ms, 5000);  // etcd 3.6's name, typed alike
  EXPECT_EQ(flags->client_tls.cert_file, "/pki/server.crt");
  EXPECT_EQ(flags->client_tls.key_file, "/pki/server.key");
  EXPECT_TRUE(flags->client_tls.client_cert_auth);
  EXPECT_EQ(flags->client_tls.trusted_ca_file, "/pki/ca.crt");
  EXPECT_EQ(flags->peer_tls.cert_file, "/pki/peer.crt");
  EXPECT_TRUE(flags->peer_tls.client_cert_auth);
  EXPECT_EQ(flags->peer_tls.trusted_ca_file, "");
  EXPECT_EQ(flags->log_outputs, (std::vector<std::string>{"stderr", "stdout"}));
  EXPECT_EQ(flags->cipher_suites.size(), 1u);
  EXPECT_EQ(flags->lease_revoke_rate, 500);  // Leasehold's own flag, under its name
  EXPECT_EQ(flags->config_file_unknown_keys, std::vector<std::string>{"no-such-key"});
  ASSERT_EQ(flags->ineffective_flags.size(), 1u);
  EXPECT_EQ(flags->ineffective_flags[0].first, "max-wals");
}

TEST_F(ConfigFileTest, TheFileAloneCountsAsEtcdsDoes) {
  const std::string path = Write("name: from-file\n");
  ScopedEnv name("ETCD_NAME", "from-env");
  ScopedEnv data("ETCD_DATA_DIR", "/from/env");
  auto flags = Parse({"--config-file", path, "--election-timeout", "5000"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->name, "from-file");
  EXPECT_EQ(flags->data_dir, "./data");
  EXPECT_EQ(flags->election_timeout_ms, 1000);
  ScopedEnv file("ETCD_CONFIG_FILE", path.c_str());
  flags = Parse({});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->name, "from-file");
}

TEST_F(ConfigFileTest, BadFilesAndValuesAreRefusedNamingTheKey) {
  auto flags = Parse({"--config-file", "/no/such/file.yml"});
  ASSERT_FALSE(flags.ok());
  EXPECT_EQ(flags.status().message(), "cannot read the configuration file /no/such/file.yml");
  std::string path = Write("heartbeat-interval: often\n");
  flags = Parse({"--config-file", path});
  ASSERT_FALSE(flags.ok());
  EXPECT_EQ(flags.status().message(), path + ": heartbeat-interval must be a whole number");
  path = Write("client-transport-security: [a]\n");
  flags = Parse({"--config-file", path});
  ASSERT_FALSE(flags.ok());
  EXPECT_EQ(flags.status().message(), path + ": client-transport-security must be a mapping");
  path = Write("name: [unclosed\n");
  flags = Parse({"--config-file", path});
  ASSERT_FALSE(flags.ok());
  EXPECT_EQ(std::string(flags.status().message()).rfind(path + ": not valid YAML", 0), 0u)
      << flags.status();
  path = Write("max-txn-ops: 0\ninitial-cluster-state: maybe\n");  // checked as the flag is
  flags = Parse({"--config-file", path});
  ASSERT_FALSE(flags.ok());
  EXPECT_EQ(flags.status().message(), path + ": invalid value \"0\" for max-txn-ops");
}

TEST(FlagsTest, Etcd36NamesAndFeatureGates) {
  auto flags = Parse({"--corrupt-check-time=2m", "--watch-progress-notify-interval=5s",
                      "--feature-gates=InitialCorruptCheck=true,StopGRPCServiceOnDefrag=false"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->corrupt_check_ms, 120'000);
  EXPECT_EQ(flags->watch_progress_notify_interval_ms, 5'000);
  EXPECT_TRUE(flags->initial_corrupt_check);
  ASSERT_EQ(flags->ineffective_flags.size(), 1u);
  EXPECT_EQ(flags->ineffective_flags[0].first, "feature-gates=StopGRPCServiceOnDefrag");
  auto knobs = Parse({"--snapshot-catchup-entries=100", "--experimental-memory-mlock",
                      "--compaction-sleep-interval=10ms", "--max-learners=2"});
  ASSERT_TRUE(knobs.ok()) << knobs.status();
  EXPECT_EQ(knobs->snapshot_catchup_entries, 100);
  EXPECT_EQ(knobs->ineffective_flags.size(), 3u);
  auto tracing = Parse({"--enable-distributed-tracing"});
  ASSERT_TRUE(tracing.ok());
  EXPECT_EQ(tracing->unserved.size(), 1u);
  EXPECT_FALSE(Parse({"--max-learners=0"}).ok());
  EXPECT_FALSE(Parse({"--feature-gates=NoSuchGate=true"}).ok());
  EXPECT_FALSE(Parse({"--feature-gates=InitialCorruptCheck"}).ok());
}

TEST(FlagsTest, Urls) {
  EXPECT_EQ(*HostPortOfUrl("http://127.0.0.1:2379"), "127.0.0.1:2379");
  EXPECT_EQ(*HostPortOfUrl("https://127.0.0.1:2379/"), "127.0.0.1:2379");
  EXPECT_FALSE(HostPortOfUrl("ftp://127.0.0.1:2379").ok());
  EXPECT_FALSE(HostPortOfUrl("unix://127.0.0.1:2379").ok());
  EXPECT_FALSE(HostPortOfUrl("http://127.0.0.1").ok());
  // etcd's Unix socket URLs: what follows the scheme is the socket's path.
  EXPECT_EQ(*GrpcAddressOfUrl("unix://localhost:2379"), "unix:localhost:2379");
  EXPECT_EQ(*GrpcAddressOfUrl("unixs:///run/etcd.sock"), "unix:/run/etcd.sock");
  EXPECT_EQ(*GrpcAddressOfUrl("http://127.0.0.1:2379"), "127.0.0.1:2379");
  EXPECT_FALSE(GrpcAddressOfUrl("unix://").ok());
  EXPECT_TRUE(IsUnixUrl("unixs://x") && !IsUnixUrl("http://x:1"));
}

}  // namespace
}  // namespace leasehold::server
