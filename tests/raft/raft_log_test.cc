// Unit tests for MemoryStorage, RaftLog, Progress/Inflights and quorum arithmetic.
#include "raft/raft_log.h"

#include <gtest/gtest.h>

#include "raft/memory_storage.h"
#include "raft/progress.h"
#include "raft/quorum.h"

namespace leasehold::raft {
namespace {

pb::Entry E(uint64_t index, uint64_t term) {
  pb::Entry e;
  e.set_index(index);
  e.set_term(term);
  return e;
}

TEST(MemoryStorageTest, AppendCompactSnapshot) {
  MemoryStorage s;
  ASSERT_TRUE(s.Append({E(1, 1), E(2, 1), E(3, 2), E(4, 2)}).ok());
  EXPECT_EQ(s.FirstIndex(), 1u);
  EXPECT_EQ(s.LastIndex(), 4u);
  // Overwrite a conflicting suffix.
  ASSERT_TRUE(s.Append({E(3, 3)}).ok());
  EXPECT_EQ(s.LastIndex(), 3u);
  EXPECT_EQ(*s.Term(3), 3u);
  ASSERT_TRUE(s.CreateSnapshot(2, pb::ConfState(), "app").ok());
  ASSERT_TRUE(s.Compact(2).ok());
  EXPECT_EQ(s.FirstIndex(), 3u);
  EXPECT_TRUE(IsCompacted(s.Entries(2, 3, UINT64_MAX).status()));
  EXPECT_TRUE(IsCompacted(s.Term(1).status()));
  EXPECT_EQ(*s.Term(2), 1u);
  EXPECT_TRUE(IsEntryUnavailable(s.Term(9).status()));
  EXPECT_EQ(s.GetSnapshot()->metadata().index(), 2u);
}

TEST(MemoryStorageTest, EntriesRespectSizeLimitButReturnOne) {
  MemoryStorage s;
  pb::Entry a = E(1, 1), b = E(2, 1);
  a.set_data(std::string(100, 'x'));
  b.set_data(std::string(100, 'y'));
  ASSERT_TRUE(s.Append({a, b}).ok());
  EXPECT_EQ(s.Entries(1, 3, 1)->size(), 1u);
  EXPECT_EQ(s.Entries(1, 3, UINT64_MAX)->size(), 2u);
}

TEST(RaftLogTest, MaybeAppendTruncatesConflictsAndCommits) {
  MemoryStorage s;
  ASSERT_TRUE(s.Append({E(1, 1), E(2, 2), E(3, 3)}).ok());
  RaftLog log(&s);
  // Mismatched anchor.
  EXPECT_FALSE(log.MaybeAppend(3, 2, 3, std::vector<pb::Entry>{E(4, 4)}).has_value());
  // Conflict at 3: replaced.
  auto last = log.MaybeAppend(2, 2, 3, std::vector<pb::Entry>{E(3, 4), E(4, 4)});
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(*last, 4u);
  EXPECT_EQ(log.committed(), 3u);
  EXPECT_EQ(*log.Term(3), 4u);
  EXPECT_EQ(log.UnstableEntries().size(), 2u);
}

TEST(RaftLogTest, FindConflictByTerm) {
  MemoryStorage s;
  ASSERT_TRUE(s.Append({E(1, 1), E(2, 1), E(3, 3), E(4, 3), E(5, 5)}).ok());
  RaftLog log(&s);
  EXPECT_EQ(log.FindConflictByTerm(5, 4).first, 4u);
  EXPECT_EQ(log.FindConflictByTerm(5, 2).first, 2u);
  EXPECT_EQ(log.FindConflictByTerm(5, 0).first, 0u);
  EXPECT_EQ(log.FindConflictByTerm(5, 9).first, 5u);
}

TEST(RaftLogTest, UpToDateCompare) {
  MemoryStorage s;
  ASSERT_TRUE(s.Append({E(1, 1), E(2, 2)}).ok());
  RaftLog log(&s);
  EXPECT_TRUE(log.IsUpToDate(1, 3));
  EXPECT_TRUE(log.IsUpToDate(2, 2));
  EXPECT_FALSE(log.IsUpToDate(1, 2));
  EXPECT_FALSE(log.IsUpToDate(9, 1));
}

TEST(RaftLogTest, CommitOnlyCurrentTermEntries) {
  MemoryStorage s;
  ASSERT_TRUE(s.Append({E(1, 1), E(2, 2)}).ok());
  RaftLog log(&s);
  EXPECT_FALSE(log.MaybeCommit(2, 3));
  EXPECT_TRUE(log.MaybeCommit(2, 2));
  EXPECT_EQ(log.committed(), 2u);
}

TEST(ProgressTest, InflightsBoundTheWindow) {
  Progress p(3);
  p.BecomeReplicate();
  for (uint64_t i = 1; i <= 3; ++i) {
    EXPECT_FALSE(p.IsPaused());
    p.OptimisticUpdate(i);
    p.inflights.Add(i);
  }
  EXPECT_TRUE(p.IsPaused());
  p.MaybeUpdate(2);
  p.inflights.FreeLE(2);
  EXPECT_FALSE(p.IsPaused());
  EXPECT_EQ(p.inflights.Count(), 1u);
}

TEST(ProgressTest, ProbeRejectUsesHint) {
  Progress p(4);
  p.next_index = 11;
  EXPECT_FALSE(p.MaybeDecrTo(7, 3));  // stale: not the append we sent
  EXPECT_TRUE(p.MaybeDecrTo(10, 3));
  EXPECT_EQ(p.next_index, 4u);
}

TEST(QuorumTest, MajorityCommitAndVotes) {
  EXPECT_EQ(MajorityCommitted({5, 3, 9}), 5u);
  EXPECT_EQ(MajorityCommitted({5, 3, 9, 1}), 3u);
  EXPECT_EQ(MajorityCommitted({7}), 7u);
  EXPECT_EQ(TallyVotes(3, 2, 0), VoteResult::kWon);
  EXPECT_EQ(TallyVotes(4, 2, 2), VoteResult::kLost);
  EXPECT_EQ(TallyVotes(5, 2, 1), VoteResult::kPending);
}

}  // namespace
}  // namespace leasehold::raft
