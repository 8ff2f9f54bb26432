// bbolt files: what the builder lays out reads back pair for pair (across pages, branch levels and
// oversized values), and damaged files are refused rather than read out of bounds.
#include "storage/backup/bolt_file.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/status/statusor.h"

namespace leasehold::storage {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

absl::StatusOr<Pairs> ReadBucket(std::string_view file, std::string_view bucket) {
  Pairs pairs;
  absl::Status st =
      ForEachInBoltBucket(file, bucket, [&](std::string_view key, std::string_view value) {
        pairs.emplace_back(key, value);
        return absl::OkStatus();
      });
  if (!st.ok()) return st;
  return pairs;
}

std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "key-%06d", i);
  return buf;
}

TEST(BoltFileTest, BucketsReadBackInOrderAcrossPagesAndLevels) {
  Pairs small, many;
  small.emplace_back("a", "1");
  small.emplace_back("b", std::string(20'000, 'v'));  // needs overflow pages of its own
  small.emplace_back("c", "");
  for (int i = 0; i < 20'000; ++i)
    many.emplace_back(Key(i), std::string(i % 50, 'x'));  // three levels
  BoltFileBuilder builder;
  builder.AddBucket("empty");
  builder.AddBucket("many");
  for (const auto& [k, v] : many) builder.Put(k, v);
  builder.AddBucket("small");
  for (const auto& [k, v] : small) builder.Put(k, v);
  const std::string file = builder.Finish();

  EXPECT_TRUE(LooksLikeBoltFile(file));
  EXPECT_EQ(file.size() % 4096, 0u);
  EXPECT_EQ(*ReadBucket(file, "small"), small);
  EXPECT_EQ(*ReadBucket(file, "many"), many);
  EXPECT_TRUE(ReadBucket(file, "empty")->empty());
  EXPECT_TRUE(absl::IsNotFound(ReadBucket(file, "absent").status()));
  EXPECT_TRUE(absl::IsNotFound(ReadBucket(file, "smal").status()));
}

TEST(BoltFileTest, DamagedFilesAreRefused) {
  BoltFileBuilder builder;
  builder.AddBucket("b");
  for (int i = 0; i < 1000; ++i) builder.Put(Key(i), "value");
  const std::string file = builder.Finish();

  std::string both_metas_bad = file;
  both_metas_bad[16 + 20] ^= 1;         // meta 0's root page id: its checksum no longer holds
  both_metas_bad[4096 + 16 + 20] ^= 1;  // and meta 1's
  std::string huge_pair = file;         // the first leaf's first key claims 4 GiB
  for (int i = 0; i < 4; ++i) huge_pair[3 * 4096 + 16 + 8 + i] = '\xff';
  std::string wrong_page_id = file;  // a page whose header names another page
  wrong_page_id[3 * 4096] ^= 1;
  // The bucket's branch page comes just before the root bucket's page, which is the last: point its
  // second child at its first, so one leaf is reached twice.
  const size_t branch = file.size() - 2 * 4096;
  ASSERT_EQ(file[branch + 8], '\x01');  // a branch page
  std::string child_twice = file;
  child_twice.replace(branch + 16 + 16 + 8, 8, file.substr(branch + 16 + 8, 8));
  std::string many_elements = file;  // an element count past the end of the page
  many_elements[3 * 4096 + 10] = '\xff';
  many_elements[3 * 4096 + 11] = '\xff';
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", ""},
      {"foreign", std::string(3 * 4096, 'z')},
      {"truncated", file.substr(0, file.size() - 4096)},
      {"both-metas-bad", both_metas_bad},
      {"huge-pair", huge_pair},
      {"wrong-page-id", wrong_page_id},
      {"child-twice", child_twice},
      {"many-elements", many_elements}};
  for (const auto& [name, data] : cases) {
    auto read = ReadBucket(data, "b");
    EXPECT_TRUE(absl::IsDataLoss(read.status())) << name << ": " << read.status();
  }
}

TEST(BoltFileTest, ATornFirstMetaPageFallsBackToTheSecond) {
  BoltFileBuilder builder;
  builder.AddBucket("b");
  builder.Put("k", "v");
  std::string file = builder.Finish();
  file[16] ^= 1;  // meta 0's magic
  EXPECT_EQ(*ReadBucket(file, "b"), (Pairs{{"k", "v"}}));
}

}  // namespace
}  // namespace leasehold::storage
