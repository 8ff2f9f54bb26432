// Scenario tests: elections, the Raft paper's figure 7 and figure 8 cases, PreVote, CheckQuorum
// and leases, replication flow control, batching, ReadIndex, proposals and leadership transfer.
#include <gtest/gtest.h>

#include "tests/raft/cluster.h"

namespace leasehold::raft {
namespace {

using testing::Cluster;

pb::Entry E(uint64_t index, uint64_t term) {
  pb::Entry e;
  e.set_index(index);
  e.set_term(term);
  return e;
}

std::vector<pb::Entry> LogOfTerms(const std::vector<uint64_t>& terms) {
  std::vector<pb::Entry> out;
  for (size_t i = 0; i < terms.size(); ++i) out.push_back(E(i + 1, terms[i]));
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> Log(Raft& r) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  auto ents = r.log().Slice(r.log().FirstIndex(), r.log().LastIndex() + 1, UINT64_MAX);
  for (const pb::Entry& e : *ents) out.emplace_back(e.index(), e.term());
  return out;
}

TEST(ElectionTest, SingleCandidateWins) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  EXPECT_EQ(c.Leader(), 1u);
  EXPECT_EQ(c.raft(1).term(), 1u);
  EXPECT_EQ(c.raft(2).lead(), 1u);
  EXPECT_EQ(c.raft(3).vote(), 1u);
  // The leader's no-op commits everywhere.
  EXPECT_EQ(c.raft(3).log().committed(), 1u);
}

TEST(ElectionTest, RandomizedTimeoutsAreSeededAndInRange) {
  Cluster a({1, 2, 3}), b({1, 2, 3});
  for (uint64_t id : {1, 2, 3}) {
    const int t = a.raft(id).randomized_election_ticks();
    EXPECT_GE(t, 10);
    EXPECT_LT(t, 20);
    EXPECT_EQ(t, b.raft(id).randomized_election_ticks());
  }
}

TEST(ElectionTest, TieThenResolves) {
  Cluster c({1, 2, 3, 4});
  // Both campaign before any vote is delivered: 1 gets {1,2}, 3 gets {3,4} -> split.
  c.Cut(1, 3);
  c.Cut(1, 4);
  c.Cut(3, 1);
  c.Cut(3, 2);
  ASSERT_TRUE(c.node(1).Campaign().ok());
  ASSERT_TRUE(c.node(3).Campaign().ok());
  c.Deliver();
  EXPECT_EQ(c.raft(1).role(), Role::kCandidate);
  EXPECT_EQ(c.raft(3).role(), Role::kCandidate);
  EXPECT_EQ(c.Leader(), 0u);
  c.Heal();
  c.TickAll(50);
  const uint64_t leader = c.Leader();
  ASSERT_NE(leader, 0u);
  int leaders = 0;
  for (uint64_t id : c.ids()) leaders += c.raft(id).role() == Role::kLeader;
  EXPECT_EQ(leaders, 1);
}

TEST(ElectionTest, VoteRejectedForStaleLog) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  ASSERT_TRUE(c.node(1).Propose("x").ok());
  c.Isolate(3);
  ASSERT_TRUE(c.node(1).Propose("y").ok());
  c.Deliver();
  c.Heal();
  // 3 lacks "y": it cannot win.
  c.Isolate(1);
  ASSERT_TRUE(c.node(3).Campaign().ok());
  c.Deliver();
  EXPECT_NE(c.raft(3).role(), Role::kLeader);
  ASSERT_TRUE(c.node(2).Campaign().ok());
  c.Deliver();
  EXPECT_EQ(c.raft(2).role(), Role::kLeader);
}

// Figure 7 of the Raft paper: a term-8 leader brings followers a-f to its log.
TEST(PaperTest, Figure7FollowerLogsConverge) {
  const std::vector<uint64_t> leader_terms = {1, 1, 1, 4, 4, 5, 5, 6, 6, 6};
  const std::vector<std::vector<uint64_t>> followers = {
      {1, 1, 1, 4, 4, 5, 5, 6, 6},           // a
      {1, 1, 1, 4},                          // b
      {1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6},     // c
      {1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7},  // d
      {1, 1, 1, 4, 4, 4, 4},                 // e
      {1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3},     // f
  };
  Cluster c({1, 2, 3, 4, 5, 6, 7});
  auto seed = [&](uint64_t id, const std::vector<uint64_t>& terms) {
    ASSERT_TRUE(c.storage(id).Append(LogOfTerms(terms)).ok());
    pb::HardState hs;
    hs.set_term(7);
    hs.set_commit(3);
    c.storage(id).SetHardState(hs);
    c.Restart(id);
  };
  seed(1, leader_terms);
  for (size_t i = 0; i < followers.size(); ++i) seed(i + 2, followers[i]);
  c.Elect(1);
  ASSERT_EQ(c.Leader(), 1u);
  EXPECT_EQ(c.raft(1).term(), 8u);
  const auto want = Log(c.raft(1));
  ASSERT_EQ(want.size(), 11u);  // ten entries plus the term-8 no-op
  for (uint64_t id = 2; id <= 7; ++id) EXPECT_EQ(Log(c.raft(id)), want) << "follower " << id;
  EXPECT_EQ(c.raft(1).log().committed(), 11u);
}

// Fast back-off: a follower with a long divergent tail costs a few round trips, not one per entry.
TEST(PaperTest, RejectionHintsSkipWholeTerms) {
  Cluster c({1, 2, 3});
  std::vector<uint64_t> leader(5, 1), follower(5, 1);
  for (int i = 0; i < 100; ++i) follower.push_back(2);
  for (int i = 0; i < 50; ++i) leader.push_back(3);
  auto seed = [&](uint64_t id, const std::vector<uint64_t>& terms) {
    ASSERT_TRUE(c.storage(id).Append(LogOfTerms(terms)).ok());
    pb::HardState hs;
    hs.set_term(3);
    c.storage(id).SetHardState(hs);
    c.Restart(id);
  };
  seed(1, leader);
  seed(2, leader);
  seed(3, follower);
  int rejections = 0;
  c.SetFilter([&](const pb::Message& m) {
    if (m.type() == pb::MSG_APPEND_RESPONSE && m.reject()) ++rejections;
    return false;
  });
  c.Elect(1);
  EXPECT_EQ(Log(c.raft(3)), Log(c.raft(1)));
  EXPECT_LE(rejections, 3);
}

// Figure 8: a leader must not commit an earlier-term entry by counting replicas.
TEST(PaperTest, Figure8OnlyCurrentTermEntriesCommitByCounting) {
  Cluster c({1, 2, 3});
  auto seed = [&](uint64_t id, const std::vector<uint64_t>& terms) {
    ASSERT_TRUE(c.storage(id).Append(LogOfTerms(terms)).ok());
    pb::HardState hs;
    hs.set_term(3);
    hs.set_commit(1);
    c.storage(id).SetHardState(hs);
    c.Restart(id);
  };
  seed(1, {1, 2});
  seed(2, {1, 2});
  seed(3, {1});
  // Elect 1 but hold back all appends, then deliver an ack for index 2 only.
  c.SetFilter([](const pb::Message& m) { return m.type() == pb::MSG_APPEND; });
  c.Elect(1);
  ASSERT_EQ(c.Leader(), 1u);
  ASSERT_EQ(c.raft(1).term(), 4u);
  pb::Message ack;
  ack.set_type(pb::MSG_APPEND_RESPONSE);
  ack.set_from(2);
  ack.set_to(1);
  ack.set_term(4);
  ack.set_index(2);
  ASSERT_TRUE(c.node(1).Step(ack).ok());
  // Index 2 (term 2) is on a majority, yet not committed.
  EXPECT_EQ(c.raft(1).log().committed(), 1u);
  ack.set_index(3);
  ASSERT_TRUE(c.node(1).Step(ack).ok());
  // The term-4 no-op at 3 commits, and 2 with it.
  EXPECT_EQ(c.raft(1).log().committed(), 3u);
}

TEST(PreVoteTest, PartitionedNodeDoesNotInflateTerms) {
  Cluster c({1, 2, 3}, [](Config& cfg) { cfg.pre_vote = true; });
  c.Elect(1);
  ASSERT_EQ(c.raft(1).term(), 1u);
  c.Isolate(3);
  c.Tick(3, 100);
  EXPECT_EQ(c.raft(3).term(), 1u);
  EXPECT_EQ(c.raft(3).role(), Role::kPreCandidate);
  c.Heal();
  c.TickAll(5);
  EXPECT_EQ(c.Leader(), 1u);
  EXPECT_EQ(c.raft(1).term(), 1u);
  EXPECT_EQ(c.raft(3).lead(), 1u);
}

TEST(PreVoteTest, WithoutPreVoteThePartitionedNodeDisrupts) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  c.Isolate(3);
  c.Tick(3, 100);
  EXPECT_GT(c.raft(3).term(), 2u);
  c.Heal();
  c.TickAll(30);
  EXPECT_GT(c.raft(1).term(), 1u);  // the old leader was deposed by the higher term
}

TEST(CheckQuorumTest, IsolatedLeaderStepsDownAndLeaseExpires) {
  Cluster c({1, 2, 3}, [](Config& cfg) { cfg.check_quorum = true; });
  c.Elect(1);
  c.TickAll(2);
  EXPECT_TRUE(c.node(1).LeaseValid());
  EXPECT_FALSE(c.node(2).LeaseValid());
  c.Isolate(1);
  c.Tick(1, 8);  // the last acked heartbeat was sent 8 ticks ago
  EXPECT_TRUE(c.node(1).LeaseValid());
  c.Tick(1, 2);  // ... and now a full election timeout ago
  EXPECT_EQ(c.raft(1).role(), Role::kLeader);
  EXPECT_FALSE(c.node(1).LeaseValid());
  c.Tick(1, 12);
  EXPECT_EQ(c.raft(1).role(), Role::kFollower);
}

TEST(CheckQuorumTest, ThePeersALeaderHeardFromLatelyAreActive) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  c.TickAll(2);
  EXPECT_TRUE(c.raft(1).PeerActive(1));
  EXPECT_TRUE(c.raft(1).PeerActive(2));
  EXPECT_TRUE(c.raft(1).PeerActive(3));
  EXPECT_FALSE(c.raft(2).PeerActive(1));  // only a leader hears from everyone
  c.Isolate(3);
  c.Tick(1, 10);  // an election timeout without an answer from 3
  EXPECT_TRUE(c.raft(1).PeerActive(2));
  EXPECT_FALSE(c.raft(1).PeerActive(3));
  EXPECT_FALSE(c.raft(1).PeerActive(4));  // not a member
  c.Heal();
  c.TickAll(2);
  EXPECT_TRUE(c.raft(1).PeerActive(3));
}

TEST(CheckQuorumTest, NoLeaseWithoutCheckQuorumOrDuringTransfer) {
  Cluster plain({1, 2, 3});
  plain.Elect(1);
  plain.TickAll(2);
  EXPECT_FALSE(plain.node(1).LeaseValid());
  Cluster c({1, 2, 3}, [](Config& cfg) { cfg.check_quorum = true; });
  c.Elect(1);
  c.TickAll(2);
  ASSERT_TRUE(c.node(1).LeaseValid());
  c.Isolate(3);
  ASSERT_TRUE(c.node(1).TransferLeadership(3).ok());
  EXPECT_FALSE(c.node(1).LeaseValid());
}

TEST(CheckQuorumTest, FollowersIgnoreVotesWhileLeaderIsAlive) {
  Cluster c({1, 2, 3}, [](Config& cfg) { cfg.check_quorum = true; });
  c.Elect(1);
  c.TickAll(1);
  // 3 campaigns out of turn: 2 still hears the leader, so it ignores the vote.
  ASSERT_TRUE(c.node(3).Campaign().ok());
  c.Cut(3, 1);  // keep the leader from hearing the higher term directly
  c.Deliver();
  EXPECT_EQ(c.raft(2).lead(), 1u);
  EXPECT_EQ(c.raft(2).term(), 1u);
  EXPECT_NE(c.raft(3).role(), Role::kLeader);
}

TEST(ReplicationTest, BatchedProposalsTravelInOneAppend) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(c.node(1).Propose("p" + std::to_string(i)).ok());
  std::vector<pb::Message> msgs = c.Drain();
  int appends = 0;
  for (const pb::Message& m : msgs) {
    if (m.type() == pb::MSG_APPEND) {
      ++appends;
      EXPECT_EQ(m.entries_size(), 50);
    }
  }
  EXPECT_EQ(appends, 2);
  for (const pb::Message& m : msgs) ASSERT_TRUE(c.node(m.to()).Step(m).ok());
  c.Deliver();
  EXPECT_EQ(c.raft(2).log().committed(), 51u);
}

TEST(ReplicationTest, InflightWindowBoundsUnackedAppends) {
  Cluster c({1, 2, 3}, [](Config& cfg) { cfg.max_inflight_msgs = 4; });
  c.Elect(1);
  c.SetFilter([](const pb::Message& m) { return m.from() == 3; });  // 3's acks are lost
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(c.node(1).Propose("x").ok());
    c.Deliver();
  }
  const Progress& pr = c.raft(1).progress().at(3);
  EXPECT_EQ(pr.state, ProgressState::kReplicate);
  EXPECT_EQ(pr.inflights.Count(), 4u);
  EXPECT_LT(pr.next_index, c.raft(1).log().LastIndex() + 1);
  c.Heal();
  c.TickAll(3);
  EXPECT_EQ(c.raft(3).log().committed(), c.raft(1).log().committed());
  EXPECT_EQ(c.raft(1).progress().at(3).match_index, c.raft(1).log().LastIndex());
}

TEST(ProposalTest, DroppedWithoutLeader) {
  Cluster c({1, 2, 3});
  absl::Status s = c.node(1).Propose("x");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
}

TEST(ProposalTest, FollowerForwardsToLeader) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  ASSERT_TRUE(c.node(2).Propose("fwd").ok());
  c.Deliver();
  const auto& applied = c.state(3).applied;
  ASSERT_FALSE(applied.empty());
  EXPECT_EQ(applied.back().data(), "fwd");
}

TEST(ProposalTest, ForwardingDisabledRejects) {
  Cluster c({1, 2, 3}, [](Config& cfg) { cfg.forward_proposals = false; });
  c.Elect(1);
  absl::Status s = c.node(2).Propose("x");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

TEST(ReadIndexTest, LeaderAndFollowerReads) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  ASSERT_TRUE(c.node(1).Propose("w").ok());
  c.Deliver();
  const uint64_t committed = c.raft(1).log().committed();
  ASSERT_TRUE(c.node(1).ReadIndex("r1").ok());
  c.Deliver();
  ASSERT_EQ(c.state(1).read_states.size(), 1u);
  EXPECT_EQ(c.state(1).read_states[0].context, "r1");
  EXPECT_EQ(c.state(1).read_states[0].index, committed);
  ASSERT_TRUE(c.node(3).ReadIndex("r2").ok());
  c.Deliver();
  ASSERT_EQ(c.state(3).read_states.size(), 1u);
  EXPECT_EQ(c.state(3).read_states[0].index, committed);
}

TEST(ReadIndexTest, WaitsForCurrentTermCommitAndQuorum) {
  Cluster c({1, 2, 3});
  c.SetFilter([](const pb::Message& m) { return m.type() == pb::MSG_APPEND_RESPONSE; });
  c.Elect(1);
  ASSERT_EQ(c.Leader(), 1u);
  ASSERT_TRUE(c.node(1).ReadIndex("early").ok());
  c.Deliver();
  EXPECT_TRUE(c.state(1).read_states.empty());  // the no-op is not committed yet
  c.Heal();
  c.TickAll(1);
  ASSERT_EQ(c.state(1).read_states.size(), 1u);
  EXPECT_EQ(c.state(1).read_states[0].index, 1u);
  // A leader cut off from the quorum cannot confirm reads.
  c.Isolate(1);
  ASSERT_TRUE(c.node(1).ReadIndex("cut").ok());
  c.TickAll(3);
  EXPECT_EQ(c.state(1).read_states.size(), 1u);
}

TEST(TransferTest, LaggingTargetCatchesUpThenLeads) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  c.Isolate(3);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c.node(1).Propose("x").ok());
  c.Deliver();
  c.Heal();
  ASSERT_TRUE(c.node(1).TransferLeadership(3).ok());
  EXPECT_EQ(c.node(1).Propose("during").code(), absl::StatusCode::kUnavailable);
  c.Deliver();
  EXPECT_EQ(c.Leader(), 3u);
  EXPECT_EQ(c.raft(1).role(), Role::kFollower);
  EXPECT_EQ(c.raft(1).lead(), 3u);
}

TEST(TransferTest, AbortedAfterElectionTimeout) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  c.Isolate(3);
  ASSERT_TRUE(c.node(1).TransferLeadership(3).ok());
  EXPECT_EQ(c.raft(1).lead_transferee(), 3u);
  c.Tick(1, 10);
  EXPECT_EQ(c.raft(1).lead_transferee(), 0u);
  EXPECT_TRUE(c.node(1).Propose("after").ok());
}

TEST(SnapshotTest, LaggingFollowerInstallsSnapshotThenReplicates) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  c.Isolate(3);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.node(1).Propose("x" + std::to_string(i)).ok());
  c.Deliver();
  const uint64_t applied = c.state(1).applied.back().index();
  ASSERT_TRUE(c.storage(1).CreateSnapshot(applied, c.raft(1).conf_state(), "state").ok());
  ASSERT_TRUE(c.storage(1).Compact(applied).ok());
  c.Heal();
  c.TickAll(3);
  EXPECT_EQ(c.storage(3).GetSnapshot()->metadata().index(), applied);
  EXPECT_EQ(c.storage(3).GetSnapshot()->data(), "state");
  ASSERT_TRUE(c.node(1).Propose("after").ok());
  c.Deliver();
  EXPECT_EQ(c.raft(3).log().committed(), c.raft(1).log().committed());
  EXPECT_EQ(c.state(3).applied.back().data(), "after");
  EXPECT_EQ(c.raft(1).progress().at(3).state, ProgressState::kReplicate);
}

TEST(SnapshotTest, LostSnapshotIsResent) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  c.Isolate(3);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c.node(1).Propose("x").ok());
  c.Deliver();
  const uint64_t applied = c.state(1).applied.back().index();
  ASSERT_TRUE(c.storage(1).CreateSnapshot(applied, c.raft(1).conf_state(), "s").ok());
  ASSERT_TRUE(c.storage(1).Compact(applied).ok());
  c.Heal();
  int snapshots_dropped = 0;
  c.SetFilter([&](const pb::Message& m) {
    if (m.type() == pb::MSG_SNAPSHOT && snapshots_dropped == 0) {
      ++snapshots_dropped;
      return true;
    }
    return false;
  });
  c.TickAll(5);
  EXPECT_EQ(snapshots_dropped, 1);
  EXPECT_EQ(c.storage(3).GetSnapshot()->metadata().index(), applied);
}

TEST(RestartTest, RecoversPersistedState) {
  Cluster c({1, 2, 3});
  c.Elect(1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.node(1).Propose("x").ok());
  c.Deliver();
  const uint64_t committed = c.raft(2).log().committed();
  c.Restart(2);
  EXPECT_EQ(c.raft(2).term(), 1u);
  EXPECT_EQ(c.raft(2).vote(), 1u);
  EXPECT_EQ(c.raft(2).log().committed(), committed);
  c.TickAll(2);
  EXPECT_EQ(c.Leader(), 1u);
}

}  // namespace
}  // namespace leasehold::raft
