// Runs the deterministic Raft simulation over many seeds (RAFT_SIM_SEED replays a single one).
#include "tests/raft/simulation.h"

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace leasehold::raft::sim {
namespace {

constexpr uint64_t kSeedsPerShard = 250;
constexpr uint64_t kShards = 8;  // 2,000 seeds in total

void RunSeeds(uint64_t start, uint64_t count) {
  InstallSeedReporter();
  uint64_t sent_before_persisting = 0;
  for (uint64_t seed = start; seed < start + count; ++seed) {
    SimOptions opt;
    opt.seed = seed;
    SimResult r = RunSimulation(opt);
    ASSERT_TRUE(r.ok) << r.failure << "\nreplay with RAFT_SIM_SEED=" << seed;
    sent_before_persisting += r.sent_before_persisting;
  }
  EXPECT_GT(sent_before_persisting, 0u)
      << "no leader ever sent before persisting: that path went untested";
}

TEST(RaftSimulationTest, ReplaySeedFromEnvironment) {
  const char* env = std::getenv("RAFT_SIM_SEED");
  if (env == nullptr) GTEST_SKIP() << "set RAFT_SIM_SEED to replay one seed";
  RunSeeds(std::stoull(env), 1);
}

class RaftSimulationShard : public ::testing::TestWithParam<uint64_t> {};

TEST_P(RaftSimulationShard, Seeds) {
  if (std::getenv("RAFT_SIM_SEED") != nullptr) GTEST_SKIP();
  RunSeeds(1 + GetParam() * kSeedsPerShard, kSeedsPerShard);
}

INSTANTIATE_TEST_SUITE_P(Shards, RaftSimulationShard, ::testing::Range<uint64_t>(0, kShards));

}  // namespace
}  // namespace leasehold::raft::sim
