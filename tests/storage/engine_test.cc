// Engine: bounded iterators, the size estimate with preallocated write-ahead logs, and --wal-dir.
#include "storage/backend/engine.h"

#include <filesystem>
#include <random>

#include <gtest/gtest.h>

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

// The size on disk holds every version of a key until a compaction; the live-size estimate holds
// only the latest once old ones are compacted away.
TEST(EngineTest, LiveSizeLeavesOutOverwrittenVersions) {
  testing::TempDir dir;
  auto engine = Engine::Open(dir.Sub("db"));
  ASSERT_TRUE(engine.ok()) << engine.status();
  std::mt19937_64 random(7);
  for (int version = 0; version < 20; ++version) {
    std::string value(10000, '\0');
    for (char& c : value) c = static_cast<char>(random());  // incompressible
    rocksdb::WriteBatch batch;
    batch.Put("k", value);
    ASSERT_TRUE((*engine)->Write(&batch, false).ok());
  }
  EXPECT_GE((*engine)->ApproximateSize(), 200000);  // every version, in the log
  EXPECT_GE((*engine)->ApproximateLiveSize(), 10000);
  ASSERT_TRUE((*engine)->CompactAll().ok());
  EXPECT_GE((*engine)->ApproximateLiveSize(), 10000);
  EXPECT_LT((*engine)->ApproximateLiveSize(), 40000);  // the latest only
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

// Reopening after a clean close replays nothing lost, and the closed log is trimmed to its
// contents.
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

// etcd's --wal-dir: the logs go to their own folder (made private like the data dir), the data dir
// holds none, the size estimate finds them there, and a reopen with the same folder has everything.
TEST(EngineTest, KeepsItsLogInTheWalDirGiven) {
  testing::TempDir dir;
  const std::string data = dir.Sub("db"), wal = dir.Sub("disk2/wal");
  auto count_logs = [](const std::string& folder) {
    int logs = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder))
      logs += entry.path().extension() == ".log";
    return logs;
  };
  {
    auto engine = Engine::Open(data, wal);
    ASSERT_TRUE(engine.ok()) << engine.status();
    rocksdb::WriteBatch batch;
    batch.Put("k", std::string(10000, 'x'));
    ASSERT_TRUE((*engine)->Write(&batch, true).ok());
    EXPECT_GE(count_logs(wal), 1);
    EXPECT_EQ(count_logs(data), 0);
    EXPECT_GE((*engine)->ApproximateSize(), 10000);
    EXPECT_EQ(std::filesystem::status(wal).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_all);
  }
  auto engine = Engine::Open(data, wal);
  ASSERT_TRUE(engine.ok()) << engine.status();
  auto value = (*engine)->Get("k");
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(value->size(), 10000u);
}

// Opened without the log folder it was made with (another --wal-dir, or none), the database is
// refused rather than brought up without its latest writes.
TEST(EngineTest, RefusesToOpenWithAnotherWalDir) {
  testing::TempDir dir;
  const std::string data = dir.Sub("db");
  {
    auto engine = Engine::Open(data, dir.Sub("wal-a"));
    ASSERT_TRUE(engine.ok()) << engine.status();
    rocksdb::WriteBatch batch;
    batch.Put("k", "v");
    ASSERT_TRUE((*engine)->Write(&batch, true).ok());
  }
  for (const std::string& other : {dir.Sub("wal-b"), std::string()}) {
    auto engine = Engine::Open(data, other);
    ASSERT_FALSE(engine.ok()) << "opened with wal dir '" << other << "'";
    EXPECT_EQ(engine.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(engine.status().message().find("keeps its write-ahead log in " + dir.Sub("wal-a")),
              std::string::npos)
        << engine.status();
  }
  auto engine = Engine::Open(data, dir.Sub("wal-a"));
  ASSERT_TRUE(engine.ok()) << engine.status();
  auto value = (*engine)->Get("k");
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "v");
}

// A data dir made before the choice existed keeps its log in itself, and opens as before.
TEST(EngineTest, ADataDirWithoutTheRecordKeepsItsLogInItself) {
  testing::TempDir dir;
  const std::string data = dir.Sub("db");
  {
    auto engine = Engine::Open(data);
    ASSERT_TRUE(engine.ok()) << engine.status();
    rocksdb::WriteBatch batch;
    batch.Put("k", "v");
    ASSERT_TRUE((*engine)->Write(&batch, true).ok());
  }
  ASSERT_TRUE(std::filesystem::remove(std::filesystem::path(data) / "LEASEHOLD_WAL_DIR"));
  EXPECT_EQ(Engine::Open(data, dir.Sub("wal")).status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto engine = Engine::Open(data);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_TRUE((*engine)->Get("k").ok());
}

}  // namespace
}  // namespace leasehold::storage
