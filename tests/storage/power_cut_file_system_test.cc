// PowerCutFileSystem: what a cut keeps of a file, and the engine over it: cut at a random write
// operation, reopened, it holds every synced write and a prefix of the rest, each batch whole.
#include "storage/backend/power_cut_file_system.h"

#include <filesystem>
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "storage/backend/engine.h"
#include "storage/temp_dir.h"
#include "tests/common/test_seed.h"

namespace leasehold::storage {
namespace {

std::unique_ptr<rocksdb::FSWritableFile> NewFile(rocksdb::FileSystem* fs, const std::string& path) {
  std::unique_ptr<rocksdb::FSWritableFile> file;
  EXPECT_TRUE(fs->NewWritableFile(path, rocksdb::FileOptions(), &file, nullptr).ok());
  return file;
}

TEST(PowerCutFileSystemTest, KeepsWhatWasSyncedAndATornPrefixOfTheRest) {
  testing::TempDir dir;
  std::set<uint64_t> sizes;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::string path = dir.Sub("f" + std::to_string(seed));
    PowerCutFileSystem::Cut cut;
    PowerCutFileSystem fs(rocksdb::FileSystem::Default(),
                          {.seed = seed, .on_cut = [&](const auto& c) { cut = c; }});
    auto file = NewFile(&fs, path);
    ASSERT_TRUE(file->Append(std::string(100, 's'), {}, nullptr).ok());
    ASSERT_TRUE(file->Sync({}, nullptr).ok());
    ASSERT_TRUE(file->Append(std::string(50, 'u'), {}, nullptr).ok());
    ASSERT_TRUE(file->Flush({}, nullptr).ok());
    ASSERT_EQ(std::filesystem::file_size(path), 150u);
    fs.CutNow();
    const uint64_t size = std::filesystem::file_size(path);
    EXPECT_GE(size, 100u);
    EXPECT_LE(size, 150u);
    EXPECT_EQ(cut.bytes_lost, 150 - size);
    sizes.insert(size);
    // The machine is off: nothing reaches the disk any more.
    EXPECT_TRUE(file->Append("late", {}, nullptr).IsIOError());
    EXPECT_TRUE(file->Sync({}, nullptr).IsIOError());
    EXPECT_TRUE(fs.DeleteFile(path, {}, nullptr).IsIOError());
    EXPECT_TRUE(std::filesystem::exists(path));
    EXPECT_EQ(std::filesystem::file_size(path), size);
  }
  // Torn at different bytes, not always all or nothing.
  EXPECT_GE(sizes.size(), 5u);
}

TEST(PowerCutFileSystemTest, ANeverSyncedFileMayLoseEverythingAndRenamesCarryTheirState) {
  testing::TempDir dir;
  PowerCutFileSystem fs(rocksdb::FileSystem::Default(), {.seed = 7, .on_cut = {}});
  auto synced = NewFile(&fs, dir.Sub("tmp"));
  ASSERT_TRUE(synced->Append("durable", {}, nullptr).ok());
  ASSERT_TRUE(synced->Sync({}, nullptr).ok());
  ASSERT_TRUE(synced->Close({}, nullptr).ok());
  ASSERT_TRUE(fs.RenameFile(dir.Sub("tmp"), dir.Sub("CURRENT"), {}, nullptr).ok());
  auto unsynced = NewFile(&fs, dir.Sub("new"));
  ASSERT_TRUE(unsynced->Append(std::string(4096, 'x'), {}, nullptr).ok());
  ASSERT_TRUE(unsynced->Flush({}, nullptr).ok());
  fs.CutNow();
  EXPECT_EQ(std::filesystem::file_size(dir.Sub("CURRENT")), 7u);
  EXPECT_LE(std::filesystem::file_size(dir.Sub("new")), 4096u);
}

TEST(PowerCutFileSystemTest, CutsAtTheChosenOperation) {
  testing::TempDir dir;
  bool cut = false;
  PowerCutFileSystem fs(rocksdb::FileSystem::Default(),
                        {.cut_at_op = 3, .on_cut = [&](const auto&) { cut = true; }});
  auto file = NewFile(&fs, dir.Sub("f"));            // 1
  ASSERT_TRUE(file->Append("a", {}, nullptr).ok());  // 2
  EXPECT_FALSE(cut);
  EXPECT_TRUE(file->Append("b", {}, nullptr).IsIOError());  // 3: the cut comes first
  EXPECT_TRUE(cut);
  EXPECT_EQ(fs.operations(), 3u);
}

TEST(PowerCutFileSystemTest, ARequestedCutComesAtTheNextWrite) {
  testing::TempDir dir;
  PowerCutFileSystem fs(rocksdb::FileSystem::Default(), {});
  auto file = NewFile(&fs, dir.Sub("f"));
  fs.RequestCut();
  EXPECT_FALSE(fs.cut());
  EXPECT_TRUE(file->Append("a", {}, nullptr).IsIOError());
  EXPECT_TRUE(fs.cut());
}

// The engine, cut at a random write operation while it writes batches of three keys (every third
// synced, with full compactions now and then so memtable flushes, new tables and manifest updates
// are in the path too), then reopened on the plain file system: it opens, every batch a synced
// write acknowledged is there, and what is there is a prefix of the batches, each one whole.
TEST(PowerCutFileSystemTest, EngineKeepsSyncedBatchesAndAWholePrefixAfterACutAnywhere) {
  const uint32_t seed = leasehold::testing::TestSeed();
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 25; ++trial) {
    SCOPED_TRACE(absl::StrCat("trial ", trial, " of seed ", seed));
    testing::TempDir dir;
    const std::string db = dir.Sub("db");
    auto fs = std::make_shared<PowerCutFileSystem>(
        rocksdb::FileSystem::Default(),
        PowerCutFileSystem::Options{.cut_at_op = 1 + rng() % 600, .seed = rng(), .on_cut = {}});
    int64_t acknowledged = -1;  // the last batch whose synced write (or a later one) returned OK
    int64_t issued = 0;
    {
      auto engine = Engine::Open(db, "", fs);
      if (engine.ok()) {
        for (; !fs->cut() && issued < 5000; ++issued) {
          rocksdb::WriteBatch batch;
          for (int k = 0; k < 3; ++k)
            batch.Put(absl::StrCat("b", issued, "/", k), std::to_string(issued));
          const bool sync = issued % 3 == 0;
          if ((*engine)->Write(&batch, sync).ok() && sync) acknowledged = issued;
          if (issued % 50 == 49) (void)(*engine)->CompactAll();
        }
      }
    }
    ASSERT_TRUE(fs->cut()) << "the cut never came";
    auto reopened = Engine::Open(db);
    ASSERT_TRUE(reopened.ok()) << reopened.status();
    int64_t present = 0;  // batches 0..present-1 are there
    for (; present < issued; ++present) {
      auto value = (*reopened)->Get(absl::StrCat("b", present, "/0"));
      if (!value.ok()) break;
      for (int k = 1; k < 3; ++k) {
        auto other = (*reopened)->Get(absl::StrCat("b", present, "/", k));
        ASSERT_TRUE(other.ok()) << "batch " << present << " is torn";
      }
    }
    EXPECT_GT(present, acknowledged) << "a synced batch was lost";
    for (int64_t later = present + 1; later < issued; ++later)
      EXPECT_FALSE((*reopened)->Get(absl::StrCat("b", later, "/0")).ok())
          << "batch " << later << " is there after missing batch " << present;
  }
}

}  // namespace
}  // namespace leasehold::storage
