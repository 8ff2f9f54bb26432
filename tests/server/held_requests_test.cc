#include "server/member/held_requests.h"

#include <gtest/gtest.h>

#include "common/etcd_errors.h"

namespace leasehold::server {
namespace {

PendingProposal Proposal(uint64_t id, int64_t deadline_ms, bool* caller_gone = nullptr) {
  PendingProposal p;
  p.entry.set_id(id);
  p.deadline_ms = deadline_ms;
  p.done = [](storage::ApplyResult) {};
  if (caller_gone != nullptr) p.abandoned = [caller_gone] { return *caller_gone; };
  return p;
}

TEST(HeldRequests, ExpiredRequestsAreAnsweredNoLeaderAndTheRestWait) {
  HeldRequests held;
  held.Hold(Proposal(1, 1000), 10);
  held.Hold(Proposal(2, 3000), 10);
  held.Hold(PendingConfChange{{}, [](absl::Status) {}, 1000});
  held.Hold(PendingRead{[](absl::Status) {}, 5000});
  AppliedGroup group;
  held.Expire(/*now_ms=*/1000, &group);
  ASSERT_EQ(group.completions.size(), 1u);
  EXPECT_EQ(group.completions[0].second.status, errors::NoLeader());
  ASSERT_EQ(group.status_completions.size(), 1u);
  EXPECT_EQ(group.status_completions[0].second, errors::NoLeader());
  EXPECT_EQ(held.size(), 2u);
  EXPECT_EQ(held.proposals(), 1u);
}

TEST(HeldRequests, AProposalWhoseCallerLeftIsCancelledNotWritten) {
  HeldRequests held;
  bool gone = false;
  held.Hold(Proposal(1, 9000, &gone), 10);
  held.Hold(Proposal(2, 9000), 10);
  AppliedGroup group;
  held.Expire(1000, &group);
  EXPECT_TRUE(group.completions.empty());
  gone = true;
  Inbox inbox;
  inbox.proposals.push_back(Proposal(3, 9000));
  held.MoveAhead(inbox, &group);
  ASSERT_EQ(group.completions.size(), 1u);
  EXPECT_EQ(group.completions[0].second.status, errors::RequestCancelled());
  // The one still wanted goes ahead of what came since.
  ASSERT_EQ(inbox.proposals.size(), 2u);
  EXPECT_EQ(inbox.proposals[0].entry.id(), 2u);
  EXPECT_EQ(inbox.proposals[1].entry.id(), 3u);
  EXPECT_EQ(held.size(), 0u);
}

TEST(HeldRequests, WhatWaitsIsBounded) {
  HeldRequests held;
  EXPECT_TRUE(held.RoomFor(HeldRequests::kMaxBytes));
  EXPECT_FALSE(held.RoomFor(HeldRequests::kMaxBytes + 1));
  held.Hold(Proposal(1, 1000), HeldRequests::kMaxBytes - 5);
  EXPECT_TRUE(held.RoomFor(5));
  EXPECT_FALSE(held.RoomFor(6));
  for (size_t i = 1; i < HeldRequests::kMaxRequests; ++i) {
    held.Hold(PendingRead{[](absl::Status) {}, 1000});
  }
  EXPECT_FALSE(held.RoomFor(0));
}

}  // namespace
}  // namespace leasehold::server
