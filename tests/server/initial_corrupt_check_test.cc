// The initial corruption check's verdict on its peers' hashes, as etcd judges them.
#include "server/corruption/initial_corrupt_check.h"

#include <gtest/gtest.h>

namespace leasehold::server {
namespace {

PeerHash Answered(uint64_t id, uint32_t hash, int64_t compact_revision) {
  PeerHash peer;
  peer.member_id = id;
  peer.response.emplace();
  peer.response->set_hash(hash);
  peer.response->set_compact_revision(compact_revision);
  return peer;
}

PeerHash Failed(uint64_t id, absl::Status error) {
  PeerHash peer;
  peer.member_id = id;
  peer.error = std::move(error);
  return peer;
}

TEST(InitialCorruptCheckTest, AgreeingOrSilentPeersPass) {
  EXPECT_TRUE(JudgePeerHashes(1, 42, 0, {}).ok());
  EXPECT_TRUE(JudgePeerHashes(1, 42, 5, {Answered(2, 42, 5), Answered(3, 42, 5)}).ok());
  // Down, behind the revision, or compacted past it: left out, as etcd leaves them out.
  EXPECT_TRUE(
      JudgePeerHashes(1, 42, 5,
                      {Failed(2, absl::UnavailableError("connection refused")),
                       Failed(3, absl::OutOfRangeError(
                                     "etcdserver: mvcc: required revision is a future revision"))})
          .ok());
}

TEST(InitialCorruptCheckTest, AnotherHashAtTheSameCompactRevisionIsInconsistency) {
  absl::Status st = JudgePeerHashes(0xab, 42, 5, {Answered(2, 42, 5), Answered(3, 7, 5)});
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "ab found data inconsistency with peers");
}

TEST(InitialCorruptCheckTest, AnotherHashAtAnotherCompactRevisionIsNot) {
  // The two compacted different histories away: their hashes cannot be compared.
  EXPECT_TRUE(JudgePeerHashes(1, 42, 5, {Answered(2, 7, 9)}).ok());
}

}  // namespace
}  // namespace leasehold::server
