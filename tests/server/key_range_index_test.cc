// KeyRangeIndex must find exactly the ranges MvccStore::InRange says hold a key, for every kind of
// range etcd clients send, as ranges come and go.
#include "server/watch/key_range_index.h"

#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "client/leasehold/client.h"

namespace leasehold::server {
namespace {

struct Range {
  std::string key;
  std::string range_end;
};

std::set<const Range*> Holding(const KeyRangeIndex<const Range>& index, std::string_view key) {
  std::set<const Range*> found;
  index.ForEachHolding(
      key, [&](const Range* r) { EXPECT_TRUE(found.insert(r).second) << "visited twice"; });
  return found;
}

TEST(KeyRangeIndexTest, EachKindOfRange) {
  const Range single{"a/b", ""}, prefix{"a/", "a0"}, from_key{"b", std::string("\0", 1)},
      other{"a/c", "a/e"}, high_prefix{"a\xff", "b"}, all_high{"\xff\xff", std::string("\0", 1)};
  KeyRangeIndex<const Range> index;
  for (const Range* r : {&single, &prefix, &from_key, &other, &high_prefix, &all_high})
    index.Insert(r->key, r->range_end, r);
  EXPECT_EQ(index.size(), 6u);
  EXPECT_EQ(Holding(index, "a/b"), (std::set<const Range*>{&single, &prefix}));
  EXPECT_EQ(Holding(index, "a/d"), (std::set<const Range*>{&prefix, &other}));
  EXPECT_EQ(Holding(index, "a"), (std::set<const Range*>{}));
  EXPECT_EQ(Holding(index, "a\xff\x01"), (std::set<const Range*>{&high_prefix}));
  EXPECT_EQ(Holding(index, "zz"), (std::set<const Range*>{&from_key}));
  EXPECT_EQ(Holding(index, "\xff\xff\xff"), (std::set<const Range*>{&from_key, &all_high}));
  EXPECT_TRUE(index.Erase(prefix.key, prefix.range_end, &prefix));
  EXPECT_FALSE(index.Erase(prefix.key, prefix.range_end, &prefix));
  EXPECT_FALSE(index.Erase(single.key, single.range_end, &prefix))
      << "not indexed under that range";
  EXPECT_EQ(Holding(index, "a/b"), (std::set<const Range*>{&single}));
  EXPECT_EQ(index.size(), 5u);
}

// Random ranges of every kind over a small alphabet (so they overlap and share prefixes), inserted
// and erased at random, checked against InRange for random keys after every step.
TEST(KeyRangeIndexTest, AgreesWithInRangeAsRangesComeAndGo) {
  std::mt19937 rng(20261126);
  auto random_key = [&](size_t max_length) {
    static const char kAlphabet[] = {'a', 'b', '/', '\0', '\xff'};
    std::string key(1 + rng() % max_length, 'a');
    for (char& c : key) c = kAlphabet[rng() % sizeof kAlphabet];
    return key;
  };
  std::vector<std::unique_ptr<Range>> live;
  KeyRangeIndex<const Range> index;
  for (int step = 0; step < 3000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      auto r = std::make_unique<Range>();
      r->key = random_key(4);
      switch (rng() % 4) {
        case 0:
          break;  // single key
        case 1:
          r->range_end = PrefixEnd(r->key);
          break;
        case 2:
          r->range_end = std::string("\0", 1);
          break;
        default:
          r->range_end = random_key(4);
          break;  // any range, empty ones included
      }
      index.Insert(r->key, r->range_end, r.get());
      live.push_back(std::move(r));
    } else {
      const size_t victim = rng() % live.size();
      ASSERT_TRUE(index.Erase(live[victim]->key, live[victim]->range_end, live[victim].get()));
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
    }
    ASSERT_EQ(index.size(), live.size());
    for (int probe = 0; probe < 5; ++probe) {
      const std::string key = random_key(5);
      std::set<const Range*> expected;
      for (const auto& r : live) {
        if (storage::MvccStore::InRange(key, r->key, r->range_end)) expected.insert(r.get());
      }
      ASSERT_EQ(Holding(index, key), expected) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace leasehold::server
