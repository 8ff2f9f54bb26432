// Membership change tests: single-server add/remove of voters, learners and promotion.
#include <gtest/gtest.h>

#include "tests/raft/cluster.h"

namespace leasehold::raft {
namespace {

using testing::Cluster;

pb::ConfChange CC(pb::ConfChangeType type, uint64_t node) {
  pb::ConfChange cc;
  cc.set_type(type);
  cc.set_node_id(node);
  return cc;
}

std::vector<uint64_t> Voters(const pb::ConfState& cs) {
  std::vector<uint64_t> v(cs.voters().begin(), cs.voters().end());
  std::sort(v.begin(), v.end());
  return v;
}

TEST(MembershipTest, AddVoterJoinsAndCounts) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  c.AddNode(4, {1, 2, 3});
  ASSERT_TRUE(c.node(1).ProposeConfChange(CC(pb::CONF_ADD_VOTER, 4)).ok());
  c.Deliver();
  c.TickAll(2);
  EXPECT_EQ(Voters(c.raft(1).conf_state()), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(Voters(c.raft(4).conf_state()), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(c.raft(4).log().committed(), c.raft(1).log().committed());
  // With 4 voters, a quorum is 3: losing two nodes stalls commits.
  c.Isolate(3);
  c.Isolate(4);
  const uint64_t before = c.raft(1).log().committed();
  ASSERT_TRUE(c.node(1).Propose("x").ok());
  c.Deliver();
  EXPECT_EQ(c.raft(1).log().committed(), before);
  c.Heal();
  c.TickAll(2);
  EXPECT_GT(c.raft(1).log().committed(), before);
}

TEST(MembershipTest, OnlyOnePendingChange) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  c.AddNode(4, {1, 2, 3});
  c.AddNode(5, {1, 2, 3});
  c.Isolate(2);
  c.Isolate(3);  // the first change cannot commit, so it stays pending
  ASSERT_TRUE(c.node(1).ProposeConfChange(CC(pb::CONF_ADD_VOTER, 4)).ok());
  absl::Status s = c.node(1).ProposeConfChange(CC(pb::CONF_ADD_VOTER, 5));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  c.Heal();
  c.TickAll(2);
  EXPECT_TRUE(c.node(1).ProposeConfChange(CC(pb::CONF_ADD_VOTER, 5)).ok());
}

TEST(MembershipTest, RemoveFollowerShrinksQuorum) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  ASSERT_TRUE(c.node(1).ProposeConfChange(CC(pb::CONF_REMOVE_NODE, 3)).ok());
  c.Deliver();
  EXPECT_EQ(Voters(c.raft(1).conf_state()), (std::vector<uint64_t>{1, 2}));
  c.Isolate(3);
  ASSERT_TRUE(c.node(1).Propose("two-node").ok());
  c.Deliver();
  EXPECT_EQ(c.state(2).applied.back().data(), "two-node");
}

TEST(MembershipTest, RemovedLeaderStepsDown) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  ASSERT_TRUE(c.node(1).ProposeConfChange(CC(pb::CONF_REMOVE_NODE, 1)).ok());
  c.Deliver();
  EXPECT_NE(c.raft(1).role(), Role::kLeader);
  EXPECT_FALSE(c.raft(1).IsVoter(1));
  c.Isolate(1);
  c.TickAll(40);
  const uint64_t leader = c.Leader();
  EXPECT_TRUE(leader == 2 || leader == 3) << leader;
  ASSERT_TRUE(c.node(leader).Propose("after").ok());
  c.Deliver();
  EXPECT_EQ(c.state(2).applied.back().data(), "after");
  EXPECT_EQ(c.state(3).applied.back().data(), "after");
}

TEST(MembershipTest, LearnerReplicatesWithoutVotingThenPromoted) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  c.AddNode(4, {1, 2, 3});
  ASSERT_TRUE(c.node(1).ProposeConfChange(CC(pb::CONF_ADD_LEARNER, 4)).ok());
  c.Deliver();
  c.TickAll(2);
  ASSERT_EQ(c.raft(1).conf_state().learners_size(), 1);
  EXPECT_TRUE(c.raft(1).progress().at(4).is_learner);
  ASSERT_TRUE(c.node(1).Propose("to-learner").ok());
  c.Deliver();
  EXPECT_EQ(c.state(4).applied.back().data(), "to-learner");
  // A learner never campaigns, and does not count towards commit.
  c.Tick(4, 50);
  EXPECT_EQ(c.raft(4).role(), Role::kFollower);
  EXPECT_EQ(c.raft(1).term(), 1u);
  c.Isolate(2);
  c.Isolate(3);
  const uint64_t before = c.raft(1).log().committed();
  ASSERT_TRUE(c.node(1).Propose("stalls").ok());
  c.Deliver();
  EXPECT_EQ(c.raft(1).log().committed(), before);
  c.Heal();
  c.TickAll(2);
  ASSERT_TRUE(c.node(1).ProposeConfChange(CC(pb::CONF_PROMOTE_LEARNER, 4)).ok());
  c.Deliver();
  c.TickAll(1);
  EXPECT_EQ(Voters(c.raft(4).conf_state()), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(c.raft(1).conf_state().learners_size(), 0);
}

}  // namespace
}  // namespace leasehold::raft

namespace leasehold::raft {
namespace {

// Adds `id` as a learner through leader 1 and lets the change apply.
void AddLearner(testing::Cluster& c, uint64_t id, const std::vector<uint64_t>& peers) {
  c.AddNode(id, peers);
  pb::ConfChange cc;
  cc.set_type(pb::CONF_ADD_LEARNER);
  cc.set_node_id(id);
  ASSERT_TRUE(c.node(1).ProposeConfChange(cc).ok());
  c.Deliver();
  c.TickAll(2);
  ASSERT_TRUE(c.raft(1).progress().at(id).is_learner);
}

TEST(MembershipTest, LearnerAcksDoNotConfirmReads) {
  testing::Cluster c({1, 2, 3});
  c.Elect(1);
  AddLearner(c, 4, {1, 2, 3});
  c.Isolate(2);
  c.Isolate(3);
  ASSERT_TRUE(c.node(1).ReadIndex("needs-voters").ok());
  c.TickAll(3);
  EXPECT_TRUE(c.state(1).read_states.empty());  // leader + learner is not a voter quorum
  c.Heal();
  c.TickAll(2);
  EXPECT_EQ(c.state(1).read_states.size(), 1u);
}

// Only a leader alone in the configuration may serve reads from its applied state: a learner
// applies entries on its own and its clients may see them first.
TEST(MembershipTest, SoleMemberLeaderOnlyWhileAlone) {
  testing::Cluster c({1});
  c.Elect(1);
  c.Deliver();
  EXPECT_TRUE(c.raft(1).SoleMemberLeader());
  AddLearner(c, 2, {1});
  EXPECT_FALSE(c.raft(1).SoleMemberLeader());
  EXPECT_FALSE(c.raft(2).SoleMemberLeader());
}

}  // namespace
}  // namespace leasehold::raft
