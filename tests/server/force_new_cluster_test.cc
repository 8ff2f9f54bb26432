// ForceNewCluster on a stored log: what it discards, what it appends (committed, at the current
// term) and what it refuses.
#include "server/command/force_new_cluster.h"

#include <gtest/gtest.h>

#include "storage/temp_dir.h"

namespace leasehold::server {
namespace {

constexpr uint64_t kSelf = 1;

raftpb::Entry Change(uint64_t index, uint64_t term, raftpb::ConfChangeType type, uint64_t node) {
  raftpb::ConfChange change;
  change.set_type(type);
  change.set_node_id(node);
  raftpb::Entry entry;
  entry.set_index(index);
  entry.set_term(term);
  entry.set_type(raftpb::ENTRY_CONF_CHANGE);
  entry.set_data(change.SerializeAsString());
  return entry;
}

raftpb::Entry Normal(uint64_t index, uint64_t term) {
  raftpb::Entry entry;
  entry.set_index(index);
  entry.set_term(term);
  return entry;
}

class ForceNewClusterTest : public ::testing::Test {
 protected:
  void SetUp() override { engine_ = *storage::Engine::Open(dir_.Sub("db")); }

  // Stores `entries`, a hard state (term, commit) and the membership as of the applied index.
  void Store(const std::vector<raftpb::Entry>& entries, uint64_t term, uint64_t commit,
             const raftpb::ConfState& applied_membership = raftpb::ConfState()) {
    auto log = *storage::RaftLogStore::Open(engine_.get());
    rocksdb::WriteBatch batch;
    log->Append(entries, &batch);
    raftpb::HardState hs;
    hs.set_term(term);
    hs.set_commit(commit);
    log->SetHardState(hs, &batch);
    storage::RaftLogStore::PutConfState(applied_membership, &batch);
    ASSERT_TRUE(engine_->Write(&batch, true).ok());
  }
  absl::Status Force(uint64_t applied) {
    auto log = *storage::RaftLogStore::Open(engine_.get());
    return ForceNewCluster(kSelf, applied, engine_.get(), log.get());
  }
  // The membership changes stored after `index`, as (type, node), and the stored commit index.
  std::vector<std::pair<raftpb::ConfChangeType, uint64_t>> ChangesAfter(
      uint64_t index, uint64_t* commit, uint64_t* term_of_last = nullptr) {
    auto log = *storage::RaftLogStore::Open(engine_.get());
    *commit = log->hard_state().commit();
    std::vector<std::pair<raftpb::ConfChangeType, uint64_t>> out;
    auto entries = *log->Entries(index + 1, log->LastIndex() + 1, UINT64_MAX);
    for (const raftpb::Entry& e : entries) {
      raftpb::ConfChange change;
      EXPECT_EQ(e.type(), raftpb::ENTRY_CONF_CHANGE);
      change.ParseFromString(e.data());
      out.emplace_back(change.type(), change.node_id());
      if (term_of_last != nullptr) *term_of_last = e.term();
    }
    return out;
  }

  testing::TempDir dir_;
  std::unique_ptr<storage::Engine> engine_;
};

using Changes = std::vector<std::pair<raftpb::ConfChangeType, uint64_t>>;

TEST_F(ForceNewClusterTest, RemovesTheOthersAndDropsWhatWasNotCommitted) {
  // Founded by 1, 2, 3 (nothing applied yet), one write committed at term 2, one not.
  Store({Change(1, 1, raftpb::CONF_ADD_VOTER, 1), Change(2, 1, raftpb::CONF_ADD_VOTER, 2),
         Change(3, 1, raftpb::CONF_ADD_VOTER, 3), Normal(4, 2), Normal(5, 2)},
        /*term=*/2, /*commit=*/4);
  ASSERT_TRUE(Force(/*applied=*/0).ok());
  uint64_t commit = 0, term = 0;
  EXPECT_EQ(ChangesAfter(4, &commit, &term),
            (Changes{{raftpb::CONF_REMOVE_NODE, 2}, {raftpb::CONF_REMOVE_NODE, 3}}));
  EXPECT_EQ(commit, 6u);  // the removals replace the uncommitted entry 5, committed
  EXPECT_EQ(term, 2u);
}

TEST_F(ForceNewClusterTest, CountsChangesCommittedAfterTheAppliedMembership) {
  raftpb::ConfState applied;
  applied.add_voters(1);
  applied.add_voters(2);
  // Applied up to 2 with voters {1, 2}; committed since: 3 added as a learner, then 2 removed.
  Store({Change(1, 1, raftpb::CONF_ADD_VOTER, 1), Change(2, 1, raftpb::CONF_ADD_VOTER, 2),
         Change(3, 3, raftpb::CONF_ADD_LEARNER, 3), Change(4, 3, raftpb::CONF_REMOVE_NODE, 2)},
        /*term=*/3, /*commit=*/4, applied);
  ASSERT_TRUE(Force(/*applied=*/2).ok());
  uint64_t commit = 0;
  EXPECT_EQ(ChangesAfter(4, &commit), (Changes{{raftpb::CONF_REMOVE_NODE, 3}}));
  EXPECT_EQ(commit, 5u);
}

TEST_F(ForceNewClusterTest, PromotesItselfFromLearner) {
  raftpb::ConfState applied;
  applied.add_voters(2);
  applied.add_learners(kSelf);
  Store({Normal(1, 1), Normal(2, 1)}, /*term=*/1, /*commit=*/2, applied);
  ASSERT_TRUE(Force(/*applied=*/2).ok());
  uint64_t commit = 0;
  EXPECT_EQ(ChangesAfter(2, &commit),
            (Changes{{raftpb::CONF_REMOVE_NODE, 2}, {raftpb::CONF_PROMOTE_LEARNER, kSelf}}));
  EXPECT_EQ(commit, 4u);
}

TEST_F(ForceNewClusterTest, AlreadyAloneAppendsNothing) {
  raftpb::ConfState applied;
  applied.add_voters(kSelf);
  Store({Change(1, 1, raftpb::CONF_ADD_VOTER, kSelf), Normal(2, 1), Normal(3, 1)}, /*term=*/1,
        /*commit=*/2, applied);
  ASSERT_TRUE(Force(/*applied=*/1).ok());
  uint64_t commit = 0;
  EXPECT_TRUE(ChangesAfter(2, &commit).empty());  // entry 3, never committed, is gone too
  EXPECT_EQ(commit, 2u);
}

TEST_F(ForceNewClusterTest, RefusesAMemberWhoseRemovalIsCommitted) {
  raftpb::ConfState applied;
  applied.add_voters(kSelf);
  applied.add_voters(2);
  Store({Normal(1, 1), Change(2, 1, raftpb::CONF_REMOVE_NODE, kSelf)}, /*term=*/1, /*commit=*/2,
        applied);
  EXPECT_TRUE(absl::IsFailedPrecondition(Force(/*applied=*/1)));
  auto log = *storage::RaftLogStore::Open(engine_.get());
  EXPECT_EQ(log->LastIndex(), 2u);  // nothing written
  EXPECT_EQ(log->hard_state().commit(), 2u);
}

TEST_F(ForceNewClusterTest, AnEmptyLogIsLeftAlone) {
  ASSERT_TRUE(Force(/*applied=*/0).ok());
  EXPECT_TRUE((*storage::RaftLogStore::Open(engine_.get()))->empty());
}

}  // namespace
}  // namespace leasehold::server
