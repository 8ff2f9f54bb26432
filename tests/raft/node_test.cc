// Node tests: the Ready/Advance contract and configuration validation.
#include "raft/node.h"

#include <gtest/gtest.h>

#include "raft/memory_storage.h"

namespace leasehold::raft {
namespace {

std::unique_ptr<Node> MakeNode(MemoryStorage& storage, std::vector<uint64_t> peers) {
  Config c;
  c.id = 1;
  c.storage = &storage;
  c.peers = std::move(peers);
  auto node = Node::Create(c);
  EXPECT_TRUE(node.ok()) << node.status();
  return *std::move(node);
}

void Persist(MemoryStorage& storage, const Ready& rd) {
  if (rd.snapshot) {
    ASSERT_TRUE(storage.ApplySnapshot(*rd.snapshot).ok());
  }
  ASSERT_TRUE(storage.Append(rd.entries).ok());
  if (rd.hard_state) storage.SetHardState(*rd.hard_state);
}

// Node 2's vote for node 1 in term 1.
pb::Message VoteFromNode2() {
  pb::Message vote;
  vote.set_type(pb::MSG_VOTE_RESPONSE);
  vote.set_from(2);
  vote.set_to(1);
  vote.set_term(1);
  return vote;
}

TEST(NodeTest, ConfigValidation) {
  MemoryStorage s;
  Config c;
  c.storage = &s;
  EXPECT_EQ(Node::Create(c).status().code(), absl::StatusCode::kInvalidArgument);  // id 0
  c.id = 1;
  c.election_ticks = 1;
  c.heartbeat_ticks = 1;
  EXPECT_EQ(Node::Create(c).status().code(), absl::StatusCode::kInvalidArgument);
  c.election_ticks = 10;
  c.storage = nullptr;
  EXPECT_EQ(Node::Create(c).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NodeTest, SingleNodeReadyCycle) {
  MemoryStorage s;
  auto node = MakeNode(s, {1});
  EXPECT_FALSE(node->HasReady());
  ASSERT_TRUE(node->Campaign().ok());
  ASSERT_TRUE(node->HasReady());
  Ready rd = node->GetReady();
  ASSERT_TRUE(rd.soft_state.has_value());
  EXPECT_EQ(rd.soft_state->role, Role::kLeader);
  ASSERT_TRUE(rd.hard_state.has_value());
  EXPECT_EQ(rd.hard_state->term(), 1u);
  EXPECT_EQ(rd.hard_state->vote(), 1u);
  ASSERT_EQ(rd.entries.size(), 1u);  // the leader's no-op
  ASSERT_EQ(rd.committed_entries.size(), 1u);
  Persist(s, rd);
  node->Advance(rd);
  EXPECT_FALSE(node->HasReady());

  ASSERT_TRUE(node->ProposeBatch({"a", "b"}).ok());
  rd = node->GetReady();
  EXPECT_FALSE(rd.soft_state.has_value());
  ASSERT_EQ(rd.entries.size(), 2u);
  ASSERT_EQ(rd.committed_entries.size(), 2u);
  EXPECT_EQ(rd.committed_entries[1].data(), "b");
  Persist(s, rd);
  node->Advance(rd);
  EXPECT_FALSE(node->HasReady());
  EXPECT_EQ(node->raft().log().applied(), 3u);

  ASSERT_TRUE(node->ReadIndex("ctx").ok());
  rd = node->GetReady();
  ASSERT_EQ(rd.read_states.size(), 1u);
  EXPECT_EQ(rd.read_states[0].index, 3u);
  node->Advance(rd);
}

TEST(NodeTest, MessagesAccompanyEntriesToPersistFirst) {
  MemoryStorage s;
  auto node = MakeNode(s, {1, 2});
  ASSERT_TRUE(node->Campaign().ok());
  Ready rd = node->GetReady();
  ASSERT_TRUE(rd.hard_state.has_value());
  ASSERT_EQ(rd.messages.size(), 1u);
  EXPECT_EQ(rd.messages[0].type(), pb::MSG_VOTE);
  Persist(s, rd);
  node->Advance(rd);
  ASSERT_TRUE(node->Step(VoteFromNode2()).ok());
  rd = node->GetReady();
  EXPECT_EQ(rd.soft_state->role, Role::kLeader);
  ASSERT_EQ(rd.entries.size(), 1u);
  EXPECT_TRUE(rd.committed_entries.empty());  // needs the follower's ack
  ASSERT_EQ(rd.messages.size(), 1u);
  EXPECT_EQ(rd.messages[0].type(), pb::MSG_APPEND);
  node->Advance(rd);
}

// A leader may send its appends before persisting them (Raft thesis 10.2.1): nothing in them
// claims more than the disk holds, and the commit they lead to needs the followers' replies.
TEST(NodeTest, ALeaderMaySendItsAppendsBeforePersistingThem) {
  MemoryStorage s;
  auto node = MakeNode(s, {1, 2});
  ASSERT_TRUE(node->Campaign().ok());
  Ready rd = node->GetReady();
  EXPECT_FALSE(rd.may_send_before_persisting);  // a candidate's vote request needs its vote on disk
  Persist(s, rd);
  node->Advance(rd);
  ASSERT_TRUE(node->Step(VoteFromNode2()).ok());
  rd = node->GetReady();
  ASSERT_EQ(rd.soft_state->role, Role::kLeader);
  ASSERT_EQ(rd.entries.size(), 1u);
  ASSERT_EQ(rd.messages.size(), 1u);
  EXPECT_TRUE(rd.may_send_before_persisting);  // its term and vote were persisted as a candidate
  const pb::Message append = rd.messages[0];
  Persist(s, rd);
  node->Advance(rd);
  pb::Message ack;  // the follower holds the no-op: it is committed, and replication streams on
  ack.set_type(pb::MSG_APPEND_RESPONSE);
  ack.set_from(2);
  ack.set_to(1);
  ack.set_term(1);
  ack.set_index(1);
  ASSERT_TRUE(node->Step(ack).ok());
  rd = node->GetReady();
  ASSERT_EQ(rd.committed_entries.size(), 1u);
  Persist(s, rd);
  node->Advance(rd);
  ASSERT_TRUE(node->Propose("a").ok());
  rd = node->GetReady();
  ASSERT_EQ(rd.entries.size(), 1u);
  ASSERT_EQ(rd.messages.size(), 1u);
  EXPECT_EQ(rd.messages[0].type(), pb::MSG_APPEND);
  EXPECT_TRUE(rd.may_send_before_persisting);

  // The follower answers only once its copy is on disk.
  MemoryStorage fs;
  Config fc;
  fc.id = 2;
  fc.storage = &fs;
  fc.peers = {1, 2};
  auto follower = *Node::Create(fc);
  ASSERT_TRUE(follower->Step(append).ok());
  rd = follower->GetReady();
  ASSERT_FALSE(rd.messages.empty());
  EXPECT_FALSE(rd.may_send_before_persisting);  // its first answer also carries a new term
  Persist(fs, rd);
  follower->Advance(rd);
  pb::Message more;  // the leader's next append: same term, so only the role keeps the answer back
  more.set_type(pb::MSG_APPEND);
  more.set_from(1);
  more.set_to(2);
  more.set_term(1);
  more.set_index(1);
  more.set_log_term(1);
  more.set_commit(1);
  pb::Entry* entry = more.add_entries();
  entry->set_term(1);
  entry->set_index(2);
  entry->set_data("a");
  ASSERT_TRUE(follower->Step(more).ok());
  rd = follower->GetReady();
  ASSERT_EQ(rd.entries.size(), 1u);
  ASSERT_FALSE(rd.messages.empty());
  ASSERT_FALSE(rd.hard_state.has_value() && rd.hard_state->term() != 1u);
  EXPECT_FALSE(rd.may_send_before_persisting);
}

// A sole voter commits what it appends, so its appends to a learner would tell the learner an
// entry is committed before the voter's own disk holds it: they wait for the write.
TEST(NodeTest, ASoleVotersAppendsToALearnerWaitForItsWrite) {
  MemoryStorage s;
  auto node = MakeNode(s, {1});
  ASSERT_TRUE(node->Campaign().ok());
  Ready rd = node->GetReady();
  EXPECT_FALSE(rd.may_send_before_persisting);  // a new term and vote
  Persist(s, rd);
  node->Advance(rd);
  pb::ConfChange add;
  add.set_type(pb::CONF_ADD_LEARNER);
  add.set_node_id(2);
  ASSERT_TRUE(node->ProposeConfChange(add).ok());
  rd = node->GetReady();
  Persist(s, rd);
  for (const pb::Entry& e : rd.committed_entries) {
    if (e.type() == pb::ENTRY_CONF_CHANGE) node->ApplyConfChange(add);
  }
  node->Advance(rd);
  while (node->HasReady()) {
    rd = node->GetReady();
    Persist(s, rd);
    node->Advance(rd);
  }
  ASSERT_TRUE(node->Propose("a").ok());
  rd = node->GetReady();
  ASSERT_EQ(rd.entries.size(), 1u);
  ASSERT_EQ(rd.committed_entries.size(), 1u);  // committed on append
  bool appends_to_learner = false;
  for (const pb::Message& m : rd.messages)
    appends_to_learner |= m.to() == 2 && m.type() == pb::MSG_APPEND;
  EXPECT_TRUE(appends_to_learner);
  EXPECT_FALSE(rd.may_send_before_persisting);
  node->Advance(rd);
}

TEST(NodeTest, RejectsTermlessNetworkMessages) {
  MemoryStorage s;
  auto node = MakeNode(s, {1, 2});
  pb::Message m;
  m.set_type(pb::MSG_APPEND);
  m.set_from(2);
  m.set_to(1);
  EXPECT_EQ(node->Step(m).code(), absl::StatusCode::kInvalidArgument);
}

TEST(NodeTest, SingleVoterHoldsLease) {
  MemoryStorage s;
  Config c;
  c.id = 1;
  c.storage = &s;
  c.peers = {1};
  c.check_quorum = true;
  auto node = *Node::Create(c);
  ASSERT_TRUE(node->Campaign().ok());
  EXPECT_TRUE(node->LeaseValid());  // a single voter is its own quorum
}

}  // namespace
}  // namespace leasehold::raft
