// ExpiryLoop's pacing: expired leases go many to an entry, one entry in flight at a time, the next
// as soon as the previous one completes; --lease-revoke-rate still caps the count.
#include "server/member/expiry_loop.h"

#include <set>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "storage/reopen.h"
#include "storage/temp_dir.h"

namespace leasehold::server {
namespace {

// Holds each proposal's completion until the test releases it.
class HoldingProposer : public Proposer {
 public:
  void Propose(internalpb::InternalRequest entry, Done done, Abandoned) override {
    absl::MutexLock lock(&mu);
    proposed.push_back(std::move(entry));
    waiting.push_back(std::move(done));
  }
  void ReadBarrier(std::function<void(absl::Status)> done) override { done(absl::OkStatus()); }
  void ProposeConfChange(raftpb::ConfChange, std::function<void(absl::Status)> done) override {
    done(absl::OkStatus());
  }
  void TransferLeadership(uint64_t, std::function<void(absl::Status)> done) override {
    done(absl::OkStatus());
  }
  uint64_t committed_index() const override { return 0; }
  uint64_t applied_index() const override { return 0; }
  uint64_t term() const override { return 3; }
  uint64_t leader_id() const override { return 1; }
  bool lease_valid() const override { return true; }
  uint64_t leading_term() const override { return 3; }
  int64_t pending_proposals() const override { return 0; }

  // Waits (up to 10 s) until `count` proposals have been made; false if they never came.
  bool AwaitProposals(size_t count) {
    absl::MutexLock lock(&mu);
    auto enough = [this, count] { return proposed.size() >= count; };
    return mu.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
  size_t ProposalCount() {
    absl::MutexLock lock(&mu);
    return proposed.size();
  }
  void CompleteOldest() {
    Done done;
    {
      absl::MutexLock lock(&mu);
      done = std::move(waiting.front());
      waiting.erase(waiting.begin());
    }
    done(storage::ApplyResult{});
  }

  absl::Mutex mu;
  std::vector<internalpb::InternalRequest> proposed ABSL_GUARDED_BY(mu);
  std::vector<Done> waiting ABSL_GUARDED_BY(mu);
};

class ExpiryLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(testing::ReopenStateMachine(dir_.Sub("db"), &engine_, &sm_));
    MemberConfig config;
    config.member_id = 1;
    config.name = "m1";
    member_ =
        std::make_unique<Member>(config, engine_.get(), sm_.get(), &proposer_, nullptr, &tokens_);
    // Leases granted long ago (time 1 s after the epoch): all due at once on promotion.
    for (int64_t id = 1; id <= kLeases; ++id) {
      internalpb::InternalRequest grant;
      grant.set_time_unix_ms(1'000);
      grant.mutable_lease_grant()->set_id(id);
      grant.mutable_lease_grant()->set_ttl(10);
      ASSERT_TRUE(sm_->Apply(id, grant).status.ok());
    }
    sm_->FlushApplied();
    sm_->leases().Promote(0, Member::NowUnixMs());
  }

  static constexpr int64_t kLeases = 500;
  testing::TempDir dir_;
  std::unique_ptr<storage::Engine> engine_;
  std::unique_ptr<storage::StateMachine> sm_;
  HoldingProposer proposer_;
  TokenStore tokens_{absl::Seconds(60)};
  std::unique_ptr<Member> member_;
};

TEST_F(ExpiryLoopTest, OneBoundedEntryInFlightTheNextAsSoonAsItCompletes) {
  ExpiryLoop::Options options;
  options.max_leases_per_entry = 200;
  ExpiryLoop loop(member_.get(), options);
  loop.Start();
  ASSERT_TRUE(proposer_.AwaitProposals(1));
  // Many ticks pass: nothing more is proposed while the first entry is unanswered.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(proposer_.ProposalCount(), 1u);
  proposer_.CompleteOldest();
  ASSERT_TRUE(proposer_.AwaitProposals(2));
  proposer_.CompleteOldest();
  ASSERT_TRUE(proposer_.AwaitProposals(3));
  loop.Stop();

  absl::MutexLock lock(&proposer_.mu);
  std::set<int64_t> ids;
  for (size_t i = 0; i < 3; ++i) {
    const auto& entry = proposer_.proposed[i];
    ASSERT_TRUE(entry.has_lease_expiry());
    EXPECT_EQ(entry.leader_term(), 3u);  // a deposed leader's entry is dropped by its term
    EXPECT_EQ(entry.lease_expiry().ids_size(), i < 2 ? 200 : 100);
    ids.insert(entry.lease_expiry().ids().begin(), entry.lease_expiry().ids().end());
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kLeases));  // each lease once, none left out
}

TEST_F(ExpiryLoopTest, ARevokeRateCapsTheCount) {
  ExpiryLoop::Options options;
  options.revoke_rate_per_second = 100;  // a burst of two 10 ms ticks: 2 leases
  ExpiryLoop loop(member_.get(), options);
  loop.Start();
  ASSERT_TRUE(proposer_.AwaitProposals(1));
  proposer_.CompleteOldest();
  ASSERT_TRUE(proposer_.AwaitProposals(2));
  loop.Stop();
  absl::MutexLock lock(&proposer_.mu);
  for (const auto& entry : proposer_.proposed) EXPECT_LE(entry.lease_expiry().ids_size(), 2);
}

}  // namespace
}  // namespace leasehold::server
