// ExpiryQueue: pops current entries in expiry order, skipping stale ones, checked against a sorted
// reference that plays the owner's part (each lease's current expiry).
#include "storage/lease/expiry_queue.h"

#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "tests/common/test_seed.h"

namespace leasehold::storage {
namespace {

TEST(ExpiryQueueTest, PopsCurrentEntriesInExpiryOrder) {
  std::map<int64_t, int64_t> owner = {{1, 300}, {2, 100}, {3, 200}};
  auto current = [&](int64_t id) -> std::optional<int64_t> {
    auto it = owner.find(id);
    if (it == owner.end()) return std::nullopt;
    return it->second;
  };
  ExpiryQueue q;
  for (const auto& [id, expiry] : owner) q.Push(id, expiry);
  ASSERT_NE(q.Top(current), nullptr);
  EXPECT_EQ(q.Top(current)->id, 2);
  owner[2] = 400;  // renewed: its old entry is stale and the new one behind the others
  q.Push(2, 400);
  EXPECT_EQ(q.Top(current)->id, 3);
  owner.erase(3);  // revoked
  EXPECT_EQ(q.Top(current)->id, 1);
  EXPECT_EQ(q.size(), 2u);  // the stale entries of 2 and 3 were dropped on the way
  q.Pop();
  owner.erase(1);
  EXPECT_EQ(q.Top(current)->expiry_ms, 400);
  q.Pop();
  owner.erase(2);
  EXPECT_EQ(q.Top(current), nullptr);
  EXPECT_EQ(q.size(), 0u);
}

TEST(ExpiryQueueTest, RandomOperationsMatchReference) {
  const uint32_t seed = leasehold::testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  ExpiryQueue q;
  std::map<int64_t, int64_t> expiry_of;           // id -> expiry: the owner
  std::set<std::pair<int64_t, int64_t>> ordered;  // (expiry, id)
  auto current = [&](int64_t id) -> std::optional<int64_t> {
    auto it = expiry_of.find(id);
    if (it == expiry_of.end()) return std::nullopt;
    return it->second;
  };
  for (int step = 0; step < 20000; ++step) {
    const int64_t id = static_cast<int64_t>(rng() % 500);
    const int op = static_cast<int>(rng() % 5);
    if (op < 2) {  // grant or renew
      const int64_t expiry = static_cast<int64_t>(rng() % 10000);
      if (auto it = expiry_of.find(id); it != expiry_of.end()) ordered.erase({it->second, id});
      expiry_of[id] = expiry;
      ordered.insert({expiry, id});
      q.Push(id, expiry);
    } else if (op == 2) {  // revoke
      if (auto it = expiry_of.find(id); it != expiry_of.end()) {
        ordered.erase({it->second, id});
        expiry_of.erase(it);
      }
    } else if (op == 3 && !ordered.empty()) {  // pop the soonest
      const ExpiryQueue::Item* top = q.Top(current);
      ASSERT_NE(top, nullptr);
      ASSERT_EQ(top->expiry_ms, ordered.begin()->first);
      ASSERT_EQ(top->id, ordered.begin()->second);
      q.Pop();
      expiry_of.erase(ordered.begin()->second);
      ordered.erase(ordered.begin());
    } else if (op == 4 && step % 1000 == 0) {  // the owner rebuilds from its leases
      std::vector<ExpiryQueue::Item> items;
      for (const auto& [expiry, owner_id] : ordered) items.push_back({expiry, owner_id});
      q.Rebuild(std::move(items));
      ASSERT_EQ(q.size(), ordered.size());
    }
    const ExpiryQueue::Item* top = q.Top(current);
    ASSERT_EQ(top == nullptr, ordered.empty());
    if (top != nullptr) {
      ASSERT_EQ(top->expiry_ms, ordered.begin()->first);
      ASSERT_EQ(top->id, ordered.begin()->second);
    }
    ASSERT_GE(q.size(), ordered.size());
  }
}

}  // namespace
}  // namespace leasehold::storage
