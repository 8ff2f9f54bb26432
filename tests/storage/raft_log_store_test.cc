// RaftLogStore: the Raft log on RocksDB survives reopening, replaces conflicting suffixes, and
// compacts a prefix while keeping the position it ends at.
#include "storage/backend/raft_log_store.h"

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace leasehold::storage {
namespace {

std::vector<raft::pb::Entry> Entries(uint64_t from, uint64_t to, uint64_t term) {
  std::vector<raft::pb::Entry> out;
  for (uint64_t i = from; i <= to; ++i) {
    raft::pb::Entry& e = out.emplace_back();
    e.set_index(i);
    e.set_term(term);
    e.set_data("entry-" + std::to_string(i));
  }
  return out;
}

class RaftLogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = *Engine::Open(dir_.Sub("db"));
    store_ = *RaftLogStore::Open(engine_.get());
  }
  void Write(rocksdb::WriteBatch* batch) { ASSERT_TRUE(engine_->Write(batch, true).ok()); }
  std::unique_ptr<RaftLogStore> Reopen() { return *RaftLogStore::Open(engine_.get()); }

  testing::TempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<RaftLogStore> store_;
};

TEST_F(RaftLogStoreTest, EmptyStore) {
  EXPECT_TRUE(store_->empty());
  EXPECT_EQ(store_->FirstIndex(), 1u);
  EXPECT_EQ(store_->LastIndex(), 0u);
  EXPECT_EQ(*store_->Term(0), 0u);
  EXPECT_TRUE(raft::IsEntryUnavailable(store_->Term(1).status()));
}

TEST_F(RaftLogStoreTest, AppendsAndReopens) {
  rocksdb::WriteBatch batch;
  store_->Append(Entries(1, 10, 1), &batch);
  raft::pb::HardState hs;
  hs.set_term(1);
  hs.set_vote(7);
  hs.set_commit(10);
  store_->SetHardState(hs, &batch);
  Write(&batch);
  auto reopened = Reopen();
  EXPECT_FALSE(reopened->empty());
  EXPECT_EQ(reopened->LastIndex(), 10u);
  EXPECT_EQ(reopened->GetInitialState().hard_state.vote(), 7u);
  auto entries = reopened->Entries(3, 6, 1 << 20);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].data(), "entry-3");
  // A byte limit still returns at least one entry.
  EXPECT_EQ(reopened->Entries(3, 6, 1)->size(), 1u);
  EXPECT_TRUE(raft::IsEntryUnavailable(reopened->Entries(3, 12, 1 << 20).status()));
}

TEST_F(RaftLogStoreTest, ConflictingSuffixIsReplaced) {
  rocksdb::WriteBatch batch;
  store_->Append(Entries(1, 10, 1), &batch);
  Write(&batch);
  rocksdb::WriteBatch overwrite;
  store_->Append(Entries(6, 7, 2), &overwrite);
  Write(&overwrite);
  EXPECT_EQ(store_->LastIndex(), 7u);
  EXPECT_EQ(*store_->Term(7), 2u);
  auto reopened = Reopen();
  EXPECT_EQ(reopened->LastIndex(), 7u);
  EXPECT_EQ(*reopened->Term(5), 1u);
  EXPECT_EQ(*reopened->Term(6), 2u);
}

TEST_F(RaftLogStoreTest, DiscardAfterDropsTheSuffix) {
  rocksdb::WriteBatch batch;
  store_->Append(Entries(1, 10, 1), &batch);
  Write(&batch);
  rocksdb::WriteBatch discard;
  store_->DiscardAfter(10, &discard);  // the last entry: nothing to drop
  EXPECT_EQ(discard.Count(), 0u);
  store_->DiscardAfter(6, &discard);
  Write(&discard);
  EXPECT_EQ(store_->LastIndex(), 6u);
  auto reopened = Reopen();
  EXPECT_EQ(reopened->LastIndex(), 6u);
  EXPECT_TRUE(raft::IsEntryUnavailable(reopened->Entries(6, 8, 1 << 20).status()));
  // Appending after the cut continues the log.
  rocksdb::WriteBatch more;
  reopened->Append(Entries(7, 8, 2), &more);
  Write(&more);
  EXPECT_EQ(*Reopen()->Term(8), 2u);
}

TEST_F(RaftLogStoreTest, CompactionKeepsItsPosition) {
  rocksdb::WriteBatch batch;
  store_->Append(Entries(1, 100, 3), &batch);
  Write(&batch);
  rocksdb::WriteBatch compact;
  store_->Compact(60, &compact);
  Write(&compact);
  EXPECT_EQ(store_->FirstIndex(), 61u);
  EXPECT_EQ(*store_->Term(60), 3u);
  EXPECT_TRUE(raft::IsCompacted(store_->Term(59).status()));
  EXPECT_TRUE(raft::IsCompacted(store_->Entries(50, 70, 1 << 20).status()));
  auto reopened = Reopen();
  EXPECT_EQ(reopened->FirstIndex(), 61u);
  EXPECT_EQ(reopened->LastIndex(), 100u);
  EXPECT_EQ(*reopened->Term(60), 3u);
  EXPECT_EQ(reopened->Entries(61, 62, 1 << 20)->front().data(), "entry-61");
}

TEST_F(RaftLogStoreTest, SnapshotReplacesTheLog) {
  rocksdb::WriteBatch batch;
  store_->Append(Entries(1, 10, 1), &batch);
  Write(&batch);
  raft::pb::SnapshotMetadata metadata;
  metadata.set_index(500);
  metadata.set_term(4);
  metadata.mutable_conf_state()->add_voters(1);
  metadata.mutable_conf_state()->add_voters(2);
  rocksdb::WriteBatch install;
  store_->ApplySnapshot(metadata, &install);
  Write(&install);
  EXPECT_EQ(store_->FirstIndex(), 501u);
  EXPECT_EQ(store_->LastIndex(), 500u);
  auto reopened = Reopen();
  EXPECT_EQ(reopened->FirstIndex(), 501u);
  EXPECT_EQ(reopened->LastIndex(), 500u);
  EXPECT_EQ(*reopened->Term(500), 4u);
  EXPECT_EQ(reopened->GetInitialState().conf_state.voters_size(), 2);
  rocksdb::WriteBatch next;
  reopened->Append(Entries(501, 502, 4), &next);
  Write(&next);
  EXPECT_EQ(Reopen()->LastIndex(), 502u);
}

}  // namespace
}  // namespace leasehold::storage
