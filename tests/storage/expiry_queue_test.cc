// ExpiryQueue: heap order under upserts and removals, checked against a sorted reference.
#include "storage/lease/expiry_queue.h"

#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "tests/common/test_seed.h"

namespace leasehold::storage {
namespace {

TEST(ExpiryQueueTest, PopsInExpiryOrder) {
  ExpiryQueue q;
  q.Upsert(1, 300);
  q.Upsert(2, 100);
  q.Upsert(3, 200);
  EXPECT_EQ(q.Top().id, 2);
  q.Upsert(2, 400);  // renewed: moves behind the others
  EXPECT_EQ(q.Top().id, 3);
  EXPECT_TRUE(q.Remove(3));
  EXPECT_FALSE(q.Remove(3));
  EXPECT_EQ(q.Top().id, 1);
  EXPECT_EQ(q.ExpiryOf(2), 400);
  EXPECT_EQ(q.ExpiryOf(3), std::nullopt);
}

TEST(ExpiryQueueTest, RandomOperationsMatchReference) {
  const uint32_t seed = leasehold::testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  ExpiryQueue q;
  std::map<int64_t, int64_t> expiry_of;           // id -> expiry
  std::set<std::pair<int64_t, int64_t>> ordered;  // (expiry, id)
  for (int step = 0; step < 20000; ++step) {
    const int64_t id = static_cast<int64_t>(rng() % 500);
    const int op = static_cast<int>(rng() % 3);
    if (op < 2) {
      const int64_t expiry = static_cast<int64_t>(rng() % 10000);
      if (auto it = expiry_of.find(id); it != expiry_of.end()) ordered.erase({it->second, id});
      expiry_of[id] = expiry;
      ordered.insert({expiry, id});
      q.Upsert(id, expiry);
    } else {
      const bool present = expiry_of.contains(id);
      if (present) {
        ordered.erase({expiry_of[id], id});
        expiry_of.erase(id);
      }
      ASSERT_EQ(q.Remove(id), present);
    }
    ASSERT_EQ(q.size(), ordered.size());
    if (!ordered.empty()) {
      ASSERT_EQ(q.Top().expiry_ms, ordered.begin()->first);
      ASSERT_EQ(q.Top().id, ordered.begin()->second);
    }
  }
}

}  // namespace
}  // namespace leasehold::storage
