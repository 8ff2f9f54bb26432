#include "server/corruption/corruption_monitor.h"

#include "gtest/gtest.h"

namespace leasehold::server {
namespace {

PeerHash Answer(uint64_t id, uint32_t hash, int64_t revision, int64_t compact_revision) {
  PeerHash peer;
  peer.member_id = id;
  etcdserverpb::HashKVResponse response;
  response.mutable_header()->set_member_id(id);
  response.mutable_header()->set_revision(revision);
  response.set_hash(hash);
  response.set_compact_revision(compact_revision);
  peer.response = response;
  return peer;
}

PeerHash Unreachable(uint64_t id) {
  PeerHash peer;
  peer.member_id = id;
  peer.error = absl::UnavailableError("down");
  return peer;
}

constexpr uint64_t kLeader = 1;

TEST(FindCorruptMemberTest, AgreeingOrUnreachablePeersAreFine) {
  const LocalHash leader{100, 20, 5};
  EXPECT_EQ(FindCorruptMember(kLeader, leader, leader, {Answer(2, 100, 20, 5), Unreachable(3)}),
            std::nullopt);
  // A peer behind the leader answers for the leader's revision: same hash.
  EXPECT_EQ(FindCorruptMember(kLeader, leader, LocalHash{7, 22, 5}, {Answer(2, 100, 21, 5)}),
            std::nullopt);
  // At another compact revision the hashes cover different histories: not compared.
  EXPECT_EQ(FindCorruptMember(kLeader, leader, leader, {Answer(2, 999, 20, 3)}), std::nullopt);
}

TEST(FindCorruptMemberTest, APeerWithAnotherHashAtTheSameCompactRevision) {
  const LocalHash leader{100, 20, 5};
  EXPECT_EQ(
      FindCorruptMember(kLeader, leader, leader, {Answer(2, 100, 20, 5), Answer(3, 101, 20, 5)}),
      3u);
}

TEST(FindCorruptMemberTest, APeerAheadOfTheLeader) {
  const LocalHash before{100, 20, 5}, after{100, 21, 5};
  EXPECT_EQ(FindCorruptMember(kLeader, before, after, {Answer(2, 100, 22, 5)}), 2u);
  EXPECT_EQ(FindCorruptMember(kLeader, before, after, {Answer(3, 100, 21, 6)}), 3u);
}

TEST(FindCorruptMemberTest, TheLeaderWhoseHashChangedUnderIt) {
  // Same revision and compaction, another hash: the leader's own data changed.
  EXPECT_EQ(FindCorruptMember(kLeader, LocalHash{100, 20, 5}, LocalHash{200, 20, 5},
                              {Answer(2, 100, 20, 5)}),
            kLeader);
  // Moved on in between: nothing to compare.
  EXPECT_EQ(FindCorruptMember(kLeader, LocalHash{100, 20, 5}, LocalHash{200, 21, 5}, {}),
            std::nullopt);
}

TEST(FindCorruptMemberTest, OnlyTheFirstFindingIsReturned) {
  const LocalHash leader{100, 20, 5};
  EXPECT_EQ(
      FindCorruptMember(kLeader, leader, leader, {Answer(2, 101, 20, 5), Answer(3, 102, 20, 5)}),
      2u);
}

}  // namespace
}  // namespace leasehold::server
