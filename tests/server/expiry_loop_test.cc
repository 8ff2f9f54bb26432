// ExpiryLoop's pacing: expired leases go many to an entry, one entry in flight at a time, the next
// as soon as the previous one completes; --lease-revoke-rate still caps the count.
#include "server/member/expiry_loop.h"

#include <set>

#include <gtest/gtest.h>

#include "server/test_proposer.h"

namespace leasehold::server {
namespace {

class ExpiryLoopTest : public MemberFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(MemberFixture::SetUp());
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
};

TEST_F(ExpiryLoopTest, OneBoundedEntryInFlightTheNextAsSoonAsItCompletes) {
  ExpiryLoop::Options options;
  options.max_leases_per_entry = 200;
  ExpiryLoop loop(member_.get(), options);
  loop.Start();
  ASSERT_TRUE(proposer_.AwaitProposals(1));
  // Many ticks pass: nothing more is proposed while the first entry is unanswered.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(proposer_.Proposed().size(), 1u);
  proposer_.CompleteOldest();
  ASSERT_TRUE(proposer_.AwaitProposals(2));
  proposer_.CompleteOldest();
  ASSERT_TRUE(proposer_.AwaitProposals(3));
  loop.Stop();

  const auto proposed = proposer_.Proposed();
  std::set<int64_t> ids;
  for (size_t i = 0; i < 3; ++i) {
    const auto& entry = proposed[i];
    ASSERT_TRUE(entry.has_lease_expiry());
    EXPECT_EQ(entry.leader_term(),
              TestProposer::kTerm);  // a deposed leader's entry is dropped by its term
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
  for (const auto& entry : proposer_.Proposed()) EXPECT_LE(entry.lease_expiry().ids_size(), 2);
}

}  // namespace
}  // namespace leasehold::server
