// LeaseCollection: attach/detach bookkeeping, primary-only expiry, renewals, checkpoints, scale.
#include "storage/lease/lease_collection.h"

#include <chrono>
#include <cstdint>

#include <gtest/gtest.h>

namespace leasehold::storage {
namespace {

TEST(LeaseCollectionTest, RevokeReturnsSortedKeysAndForgetsThem) {
  LeaseCollection leases;
  leases.Grant(7, 10, 10'000);
  leases.Attach(7, "b");
  leases.Attach(7, "a");
  leases.Attach(7, "c");
  leases.Detach(7, "c");
  EXPECT_EQ(leases.LeaseOfKey("a"), 7);
  EXPECT_EQ(leases.LeaseOfKey("c"), 0);
  EXPECT_EQ(leases.Revoke(7), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(leases.Contains(7));
  EXPECT_EQ(leases.LeaseOfKey("a"), 0);
}

// A lease's key set holds one key inline and grows into a set at the second: both shapes, and the
// way back, keep item_map and the sets in step.
TEST(LeaseCollectionTest, KeySetsGrowShrinkAndMoveKeysBetweenLeases) {
  LeaseCollection leases;
  leases.Grant(1, 10, 10'000);
  leases.Grant(2, 10, 10'000);
  leases.Attach(1, "k");
  leases.Attach(1, "k");  // again: still one key
  EXPECT_EQ(leases.Lookup(1, 0, true)->keys, (std::vector<std::string>{"k"}));
  leases.Attach(1, "j");
  leases.Detach(1, "k");
  leases.Detach(1, "j");
  EXPECT_TRUE(leases.Lookup(1, 0, true)->keys.empty());
  leases.Attach(1, "a");
  leases.Attach(1, "b");
  leases.Attach(2, "a");  // without a detach: the key leaves lease 1
  EXPECT_EQ(leases.LeaseOfKey("a"), 2);
  EXPECT_EQ(leases.Lookup(1, 0, true)->keys, (std::vector<std::string>{"b"}));
  leases.Detach(1, "a");  // not lease 1's any more: no effect
  EXPECT_EQ(leases.LeaseOfKey("a"), 2);
  EXPECT_EQ(leases.Revoke(2), (std::vector<std::string>{"a"}));
  EXPECT_EQ(leases.LeaseOfKey("a"), 0);
  EXPECT_EQ(leases.Revoke(1), (std::vector<std::string>{"b"}));
  EXPECT_EQ(leases.LeaseOfKey("b"), 0);
}

TEST(LeaseCollectionTest, FollowerNeverExpiresOrRenews) {
  LeaseCollection leases;
  leases.Grant(1, 5, 5'000);
  EXPECT_TRUE(leases.PopExpired(1'000'000, 10, SIZE_MAX, 100).empty());
  EXPECT_EQ(leases.Renew(1, 0), 0);
}

TEST(LeaseCollectionTest, PopExpiredStopsAtTheKeyBudgetButTakesAtLeastOneLease) {
  LeaseCollection leases;
  leases.Promote(0, /*now_ms=*/0);
  leases.Grant(1, 1, 1'000);
  leases.Grant(2, 2, 2'000);
  leases.Grant(3, 3, 3'000);
  for (const char* key : {"a", "b", "c"}) leases.Attach(1, key);
  leases.Attach(2, "d");
  // Lease 1 alone is over a budget of 2 keys: taken anyway, and nothing after it.
  EXPECT_EQ(leases.PopExpired(10'000, 10, 2, 60'000), (std::vector<int64_t>{1}));
  // 1 key, then 0: both fit in a budget of 2; the lease count still caps.
  EXPECT_EQ(leases.PopExpired(10'000, 10, 2, 60'000), (std::vector<int64_t>{2, 3}));
}

// A renewal acknowledged through a checkpoint that applies only after the new leader took over
// (the campaign found one: requested just before a leader change, proposed just after) must still
// hold on the new primary, even once the lease was popped for revocation.
TEST(LeaseCollectionTest, ACheckpointAppliedOnThePrimaryBindsItsExpiry) {
  LeaseCollection leases;
  leases.Grant(1, 3, 10'000);
  leases.Promote(500, /*now_ms=*/9'000);  // due at 10'500
  leases.Checkpoint(1, 12'000);
  EXPECT_TRUE(leases.PopExpired(12'000, 10, SIZE_MAX, 7'000).empty());
  ASSERT_EQ(leases.PopExpired(12'001, 10, SIZE_MAX, 7'000), (std::vector<int64_t>{1}));
  EXPECT_EQ(leases.Renew(1, 12'002), 0);  // popped: on its way to revocation
  leases.Checkpoint(1, 15'000);           // ...until a later promise applies
  EXPECT_EQ(leases.Renew(1, 13'000), 3);  // alive again, renewed to 16'000
  EXPECT_TRUE(leases.PopExpired(16'000, 10, SIZE_MAX, 7'000).empty());
  // A checkpoint below what the primary already has changes nothing.
  leases.Checkpoint(1, 14'000);
  EXPECT_EQ(leases.PopExpired(16'001, 10, SIZE_MAX, 7'000), (std::vector<int64_t>{1}));
}

TEST(LeaseCollectionTest, PrimaryExpiresInOrderAndRenewPostpones) {
  LeaseCollection leases;
  leases.Promote(0, /*now_ms=*/0);
  leases.Grant(1, 10, 10'000);
  leases.Grant(2, 5, 5'000);
  leases.Grant(3, 20, 20'000);
  EXPECT_EQ(leases.Ids(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(leases.Renew(2, 4'000), 5);  // now expires at 9'000
  auto expired = leases.PopExpired(12'000, 10, SIZE_MAX, 7'000);
  EXPECT_EQ(expired, (std::vector<int64_t>{2, 1}));
  // Popped leases come back after the retry interval if their revocation did not happen.
  EXPECT_TRUE(leases.PopExpired(12'000, 10, SIZE_MAX, 7'000).empty());
  EXPECT_EQ(leases.PopExpired(19'001, 10, SIZE_MAX, 7'000),
            (std::vector<int64_t>{1, 2}));  // equal times: by id
}

TEST(LeaseCollectionTest, ManyRenewalsAndRevocationsKeepExpiryOrder) {
  // Each renewal leaves a stale queue entry behind; thousands of them per lease force the queue to
  // be rebuilt from the leases several times, which must neither lose nor reorder a lease.
  LeaseCollection leases;
  leases.Promote(0, /*now_ms=*/0);
  for (int64_t id = 1; id <= 20; ++id) leases.Grant(id, 100, 100'000);
  for (int64_t now = 1; now <= 5'000; ++now) {
    for (int64_t id = 1; id <= 20; ++id) ASSERT_EQ(leases.Renew(id, now + id), 100);
  }
  for (int64_t id = 1; id <= 20; id += 2) leases.Revoke(id);
  // Lease id now expires at 5'000 + id + 100'000: the even ids, in order.
  EXPECT_TRUE(leases.PopExpired(105'002, 100, SIZE_MAX, 1'000'000).empty());
  std::vector<int64_t> expected;
  for (int64_t id = 2; id <= 20; id += 2) expected.push_back(id);
  EXPECT_EQ(leases.PopExpired(105'021, 100, SIZE_MAX, 1'000'000), expected);
  EXPECT_TRUE(leases.PopExpired(105'021, 100, SIZE_MAX, 1'000'000).empty());
}

TEST(LeaseCollectionTest, ExpiredLeaseCannotBeRenewed) {
  LeaseCollection leases;
  leases.Promote(0, /*now_ms=*/0);
  leases.Grant(1, 2, 2'000);
  // Due at 2'000: still alive in that millisecond (see the header), expired after it.
  EXPECT_EQ(leases.Renew(1, 2'000), 2);
  EXPECT_EQ(leases.Renew(1, 4'001), 0);
  EXPECT_EQ(leases.Renew(99, 0), 0);
}

TEST(LeaseCollectionTest, LeasePoppedForRevocationStaysExpiredUntilRevoked) {
  LeaseCollection leases;
  leases.Promote(0, /*now_ms=*/0);
  leases.Grant(1, 10, 10'000);
  leases.Renew(1, 1'000);  // due at 11'000
  ASSERT_EQ(leases.PopExpired(12'000, 10, SIZE_MAX, 7'000), (std::vector<int64_t>{1}));
  // Its revocation is on its way: a keep-alive meanwhile must not bring it back (etcd answers such
  // a keep-alive only once the revoke is done), nor may its time to live read as the retry delay.
  EXPECT_EQ(leases.Renew(1, 12'500), 0);
  auto ttl = leases.Lookup(1, 13'000, false);
  ASSERT_TRUE(ttl.has_value());
  EXPECT_EQ(ttl->remaining_seconds,
            -2);  // as etcd's TTL: seconds since expiry, truncated, negative
  // Nor does a checkpoint carry the retry delay to the next leader as time left.
  EXPECT_TRUE(leases.TakeCheckpoints(13'000).empty());
  // The revocation is retried after the delay if it did not happen.
  EXPECT_EQ(leases.PopExpired(19'001, 10, SIZE_MAX, 7'000), (std::vector<int64_t>{1}));
  leases.Revoke(1);
  EXPECT_FALSE(leases.Lookup(1, 19'000, false).has_value());
}

TEST(LeaseCollectionTest, PromoteGivesLeasesWithoutDeadlineTheirFullTtl) {
  LeaseCollection leases;
  leases.Grant(1, 30, /*deadline_ms=*/0);  // as restored from a backup
  leases.Grant(2, 30, 40'000);
  leases.Promote(1'000, /*now_ms=*/100'000);
  EXPECT_EQ(leases.PopExpired(100'000, 10, SIZE_MAX, 100'000), (std::vector<int64_t>{2}));
  EXPECT_TRUE(leases.PopExpired(131'000, 10, SIZE_MAX, 100'000).empty());
  EXPECT_EQ(leases.PopExpired(131'001, 10, SIZE_MAX, 1'000), (std::vector<int64_t>{1}));
}

TEST(LeaseCollectionTest, PromoteGivesAnImportedRemainingTtlInsteadOfTheFullTtl) {
  LeaseCollection leases;
  leases.Grant(1, 60, /*deadline_ms=*/0, /*remaining_seconds=*/25);  // from an etcd checkpoint
  leases.Promote(1'000, /*now_ms=*/100'000);
  EXPECT_TRUE(leases.PopExpired(126'000, 10, SIZE_MAX, 100'000).empty());
  EXPECT_EQ(leases.PopExpired(126'001, 10, SIZE_MAX, 1'000), (std::vector<int64_t>{1}));
  auto ttl = leases.Lookup(1, 126'000, false);
  ASSERT_TRUE(ttl.has_value());
  EXPECT_EQ(ttl->granted_ttl_seconds, 60);  // the TTL a renewal gives stays the granted one
}

TEST(LeaseCollectionTest, PromoteUsesCheckpointedDeadlinePlusAllowance) {
  LeaseCollection leases;
  leases.Grant(1, 60, 60'000);
  leases.Checkpoint(1, 90'000);
  leases.Promote(2'000, /*now_ms=*/0);
  auto ttl = leases.Lookup(1, 79'500, false);
  ASSERT_TRUE(ttl.has_value());
  EXPECT_EQ(ttl->granted_ttl_seconds, 60);
  EXPECT_EQ(ttl->remaining_seconds, 12);
  EXPECT_TRUE(leases.PopExpired(92'000, 10, SIZE_MAX, 1'000).empty());
  EXPECT_EQ(leases.PopExpired(92'001, 10, SIZE_MAX, 1'000), (std::vector<int64_t>{1}));
}

TEST(LeaseCollectionTest, TakeCheckpointsReportsRenewedOnce) {
  LeaseCollection leases;
  leases.Promote(0, /*now_ms=*/0);
  leases.Grant(1, 10, 10'000);
  leases.Grant(2, 10, 10'000);
  leases.Renew(2, 3'000);
  auto checkpoints = leases.TakeCheckpoints(4'000);
  ASSERT_EQ(checkpoints.size(), 1u);
  EXPECT_EQ(checkpoints[0], std::make_pair(int64_t{2}, int64_t{9'000}));
  EXPECT_TRUE(leases.TakeCheckpoints(4'000).empty());
}

TEST(LeaseCollectionTest, TimeToLiveTruncatesAndListsKeys) {
  LeaseCollection leases;
  leases.Promote(0, /*now_ms=*/0);
  leases.Grant(5, 10, 10'000);
  leases.Attach(5, "k2");
  leases.Attach(5, "k1");
  auto ttl = leases.Lookup(5, 100, true);
  ASSERT_TRUE(ttl.has_value());
  EXPECT_EQ(ttl->remaining_seconds, 9);
  EXPECT_EQ(ttl->keys, (std::vector<std::string>{"k1", "k2"}));
  // Read in the grant's own millisecond: 9 still, as etcd answers right after a grant.
  EXPECT_EQ(leases.Lookup(5, 0, false)->remaining_seconds, 9);
  EXPECT_EQ(leases.Lookup(5, 8'999, false)->remaining_seconds, 1);
  EXPECT_EQ(leases.Lookup(5, 9'999, false)->remaining_seconds, 0);
  EXPECT_EQ(leases.Lookup(5, 10'000, false)->remaining_seconds, 0);
  EXPECT_FALSE(leases.Lookup(6, 0, false).has_value());
}

// One million leases fit, and the cost of grant, renew and revoke does not grow with the count
// (timed here only to print; the figures belong to the benchmark, not to an assertion).
TEST(LeaseCollectionTest, OneMillionLeases) {
  LeaseCollection leases;
  leases.Promote(0, /*now_ms=*/0);
  constexpr int64_t kLeases = 1'000'000;
  auto start = std::chrono::steady_clock::now();
  for (int64_t id = 1; id <= kLeases; ++id) leases.Grant(id, 60, 60'000 + id % 1000);
  for (int64_t id = 1; id <= kLeases; id += 2) ASSERT_EQ(leases.Renew(id, 1'000), 60);
  for (int64_t id = 2; id <= kLeases; id += 2) leases.Revoke(id);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(leases.size(), static_cast<size_t>(kLeases / 2));
  // Unrenewed leases are gone; the renewed ones expire at 61'000.
  EXPECT_TRUE(leases.PopExpired(61'000, kLeases, SIZE_MAX, 100'000).empty());
  EXPECT_EQ(leases.PopExpired(61'001, kLeases, SIZE_MAX, 100'000).size(),
            static_cast<size_t>(kLeases / 2));
  std::printf("1M grant + 500k renew + 500k revoke: %lld ms\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
}

}  // namespace
}  // namespace leasehold::storage
