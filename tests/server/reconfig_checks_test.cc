// etcd's strict reconfiguration checks: which membership changes keep a started majority of voters.
#include "server/member/reconfig_checks.h"

#include <gtest/gtest.h>

namespace leasehold::server {
namespace {

constexpr bool kStrict = true;

internalpb::MemberRecord Voter(uint64_t id, bool started = true) {
  internalpb::MemberRecord m;
  m.set_id(id);
  if (started) m.set_name("m" + std::to_string(id));
  return m;
}

internalpb::MemberRecord Learner(uint64_t id, bool started) {
  internalpb::MemberRecord m = Voter(id, started);
  m.set_is_learner(true);
  return m;
}

constexpr const char* kNotEnough =
    "etcdserver: re-configuration failed due to not enough started members";

TEST(ReconfigChecksTest, TheLastMemberCannotBeRemoved) {
  absl::Status st = MayRemoveMember({Voter(1)}, 1, kStrict);
  EXPECT_TRUE(absl::IsUnknown(st)) << st;  // etcd 3.4's code for it
  EXPECT_EQ(st.message(), kNotEnough);
}

TEST(ReconfigChecksTest, RemovalKeepsAStartedMajorityOfTheVotersLeft) {
  EXPECT_TRUE(MayRemoveMember({Voter(1), Voter(2), Voter(3)}, 3, kStrict).ok());
  // Of the two voters left, one never started: no majority.
  EXPECT_EQ(MayRemoveMember({Voter(1), Voter(2, false), Voter(3)}, 3, kStrict).message(),
            kNotEnough);
  // Removing the one that never started is fine.
  EXPECT_TRUE(MayRemoveMember({Voter(1), Voter(2, false), Voter(3)}, 2, kStrict).ok());
  // Learners go whatever the voters' state.
  EXPECT_TRUE(MayRemoveMember({Voter(1), Learner(2, false)}, 2, kStrict).ok());
}

TEST(ReconfigChecksTest, AddingAVoterNeedsStartedVotersToCarryIt) {
  // A lone member may take a second, as etcd allows for rebuilding a cluster.
  EXPECT_TRUE(MayAddMember({Voter(1)}, false, kStrict).ok());
  // Two voters, one not started yet: a third would leave 1 started of 3.
  EXPECT_EQ(MayAddMember({Voter(1), Voter(2, false)}, false, kStrict).message(), kNotEnough);
  EXPECT_TRUE(MayAddMember({Voter(1), Voter(2)}, false, kStrict).ok());
  EXPECT_TRUE(MayAddMember({Voter(1), Voter(2), Voter(3)}, false, kStrict).ok());
}

TEST(ReconfigChecksTest, OneLearnerAtATime) {
  EXPECT_TRUE(MayAddMember({Voter(1)}, true, kStrict).ok());
  absl::Status st = MayAddMember({Voter(1), Learner(2, true)}, true, kStrict);
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_EQ(st.message(), "etcdserver: too many learner members in cluster");
  // A voter may still be added beside the learner.
  EXPECT_TRUE(MayAddMember({Voter(1), Voter(2), Learner(3, true)}, false, kStrict).ok());
}

TEST(ReconfigChecksTest, ALearnerThatNeverStartedIsNotPromoted) {
  absl::Status st = MayPromoteMember({Voter(1), Learner(2, false)}, 2, kStrict);
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_EQ(st.message(),
            "etcdserver: can only promote a learner member which is in sync with leader");
  EXPECT_TRUE(MayPromoteMember({Voter(1), Learner(2, true)}, 2, kStrict).ok());
}

TEST(ReconfigChecksTest, PromotionKeepsAStartedMajority) {
  // Voters 1 (started), 2 and 3 (not): with the learner, 2 started of 4.
  EXPECT_EQ(
      MayPromoteMember({Voter(1), Voter(2, false), Voter(3, false), Learner(4, true)}, 4, kStrict)
          .message(),
      kNotEnough);
  EXPECT_TRUE(
      MayPromoteMember({Voter(1), Voter(2), Voter(3, false), Learner(4, true)}, 4, kStrict).ok());
}

constexpr const char* kUnhealthy = "etcdserver: unhealthy cluster";

absl::Status Check(MembershipChange change, int voters, int active, bool target_active = true) {
  return HealthAllowsChange(change, target_active, {.voters = voters, .active = active});
}

TEST(ReconfigChecksTest, MembersAreAddedOnlyWhileEveryVoterIsActive) {
  EXPECT_TRUE(Check(MembershipChange::kAddVoter, 1, 1).ok());
  EXPECT_TRUE(Check(MembershipChange::kAddVoter, 3, 3).ok());
  absl::Status st = Check(MembershipChange::kAddVoter, 3, 2);
  EXPECT_TRUE(absl::IsUnavailable(st)) << st;
  EXPECT_EQ(st.message(), kUnhealthy);
  // As etcd's mayAddMember: learners too.
  EXPECT_EQ(Check(MembershipChange::kAddLearner, 3, 2).message(), kUnhealthy);
  EXPECT_TRUE(Check(MembershipChange::kAddLearner, 3, 3).ok());
}

TEST(ReconfigChecksTest, AnActiveVoterIsRemovedOnlyWhileTheActiveOnesLeftAreAMajority) {
  // Three voters, all active: one may go (two active of two left).
  EXPECT_TRUE(Check(MembershipChange::kRemoveVoter, 3, 3).ok());
  // One down: removing a live one would leave one active of two, no quorum.
  EXPECT_EQ(Check(MembershipChange::kRemoveVoter, 3, 2).message(), kUnhealthy);
  // Five voters, one down: three active of four left is a majority.
  EXPECT_TRUE(Check(MembershipChange::kRemoveVoter, 5, 4).ok());
  // Two down: two active of four left is not.
  EXPECT_EQ(Check(MembershipChange::kRemoveVoter, 5, 3).message(), kUnhealthy);
  // Two voters, both active: one active of one left.
  EXPECT_TRUE(Check(MembershipChange::kRemoveVoter, 2, 2).ok());
}

TEST(ReconfigChecksTest, ASilentVoterOrALearnerMayAlwaysGo) {
  EXPECT_TRUE(Check(MembershipChange::kRemoveVoter, 3, 2, /*target_active=*/false).ok());
  EXPECT_TRUE(Check(MembershipChange::kRemoveVoter, 5, 3, /*target_active=*/false).ok());
  EXPECT_TRUE(Check(MembershipChange::kRemoveLearner, 3, 2).ok());
  EXPECT_TRUE(Check(MembershipChange::kPromote, 3, 2).ok());  // LearnerInSync's to decide
}

// --strict-reconfig-check=false: only the learner rules remain, as on etcd.
TEST(ReconfigChecksTest, WithoutStrictChecksOnlyLearnerRulesRemain) {
  EXPECT_TRUE(MayRemoveMember({Voter(1), Voter(2, false), Voter(3)}, 3, false).ok());
  EXPECT_TRUE(MayAddMember({Voter(1), Voter(2, false)}, false, false).ok());
  EXPECT_TRUE(
      MayPromoteMember({Voter(1), Voter(2, false), Voter(3, false), Learner(4, true)}, 4, false)
          .ok());
  EXPECT_FALSE(MayAddMember({Voter(1), Learner(2, true)}, true, false).ok());  // too many learners
  EXPECT_FALSE(MayPromoteMember({Voter(1), Learner(2, false)}, 2, false).ok());  // never started
  EXPECT_EQ(MayRemoveMember({Voter(1)}, 1, false).message(), kNotEnough);  // never the last voter
}

}  // namespace
}  // namespace leasehold::server
