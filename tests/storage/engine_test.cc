// Engine: bounded iterators, and the size estimate with preallocated write-ahead logs.
#include "storage/engine.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "storage/temp_dir.h"

namespace leasehold::storage {
namespace {

TEST(EngineTest, BoundedIteratorStopsBeforeTheBound) {
  testing::TempDir dir;
  auto engine = Engine::Open(dir.Sub("db"));
  ASSERT_TRUE(engine.ok()) << engine.status();
  rocksdb::WriteBatch batch;
  for (const char* key : {"a1", "a2", "b1", "b2"}) batch.Put(key, "v");
  ASSERT_TRUE((*engine)->Write(&batch, true).ok());
  auto it = (*engine)->NewIterator("b");
  std::vector<std::string> seen;
  for (it->Seek("a"); it->Valid(); it->Next()) seen.push_back(it->key().ToString());
  EXPECT_EQ(seen, (std::vector<std::string>{"a1", "a2"}));
  EXPECT_TRUE(it->status().ok());
}

// The open log is preallocated far beyond what it holds; the size estimate (which the space quota
// compares) counts what was written.
TEST(EngineTest, SizeCountsWhatTheLogHoldsNotItsPreallocation) {
  testing::TempDir dir;
  auto engine = Engine::Open(dir.Sub("db"));
  ASSERT_TRUE(engine.ok()) << engine.status();
  rocksdb::WriteBatch batch;
  batch.Put("k", std::string(10000, 'x'));
  ASSERT_TRUE((*engine)->Write(&batch, true).ok());
  uint64_t log_file_bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.Sub("db"))) {
    if (entry.path().extension() == ".log") log_file_bytes += entry.file_size();
  }
  ASSERT_GT(log_file_bytes, 1u << 20) << "the log is expected to be preallocated";
  const int64_t size = (*engine)->ApproximateSize();
  EXPECT_GE(size, 10000);
  EXPECT_LT(size, 100000);
}

// A data dir whose parents do not exist yet is created with them, each private to its owner, as
// etcd creates its data dir.
TEST(EngineTest, CreatesADataDirAndItsMissingParentsPrivate) {
  testing::TempDir dir;
  const std::string nested = dir.Sub("a/b/db");
  auto engine = Engine::Open(nested);
  ASSERT_TRUE(engine.ok()) << engine.status();
  for (const std::string& created : {dir.Sub("a"), dir.Sub("a/b"), nested}) {
    const auto perms = std::filesystem::status(created).permissions();
    EXPECT_EQ(perms & std::filesystem::perms::all, std::filesystem::perms::owner_all) << created;
  }
}

// Reopening after a clean close replays nothing lost, and the closed log is trimmed to its contents.
TEST(EngineTest, ReopensWithEverythingWritten) {
  testing::TempDir dir;
  {
    auto engine = Engine::Open(dir.Sub("db"));
    ASSERT_TRUE(engine.ok()) << engine.status();
    rocksdb::WriteBatch batch;
    batch.Put("k", "v");
    ASSERT_TRUE((*engine)->Write(&batch, true).ok());
  }
  auto engine = Engine::Open(dir.Sub("db"));
  ASSERT_TRUE(engine.ok()) << engine.status();
  auto value = (*engine)->Get("k");
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "v");
  EXPECT_LT((*engine)->ApproximateSize(), 1 << 20);
}

}  // namespace
}  // namespace leasehold::storage
