// Backups: what a writer produces restores to the same replicated records, and damaged or foreign
// files are refused before anything is written.
#include "storage/backup.h"

#include <fstream>

#include <gtest/gtest.h>
#include <openssl/sha.h>

#include "leasehold/internal.pb.h"
#include "tests/storage/temp_dir.h"

namespace leasehold::storage {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Replaces the trailing digest with the right one for the (edited) bytes before it.
std::string Redigest(std::string file) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(file.data()), file.size() - 32, digest);
  file.replace(file.size() - 32, 32, reinterpret_cast<const char*>(digest), 32);
  return file;
}

void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

class BackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = *Engine::Open(dir_.Sub("source"));
    rocksdb::WriteBatch batch;
    internalpb::LeaseRecord lease;
    lease.set_id(7);
    lease.set_ttl_seconds(60);
    lease.set_deadline_unix_ms(123'456);
    batch.Put(keys::Lease(7), lease.SerializeAsString());
    batch.Put(keys::Revision({2, 0}), std::string("p") + "\x0a\x01" "a");  // 'p' + KeyValue{key:"a"}
    Engine::PutMetaU64(&batch, "rev", 2);
    Engine::PutMetaU64(&batch, "ci", 99);                    // the old cluster's applied index
    batch.Put(keys::Meta("member/x"), "old member");         // the old cluster's membership
    batch.Put(keys::Meta("identity"), "old identity");       // this member's own
    batch.Put(keys::LogEntry(5), "a raft log entry");
    ASSERT_TRUE(source_->Write(&batch, true).ok());
    WriteAll(path_, Produce(*source_, 16));
  }

  static std::string Produce(const Engine& engine, size_t chunk) {
    BackupWriter writer(engine);
    std::string file, piece;
    while (*writer.Next(chunk, &piece)) file += piece;
    EXPECT_EQ(file.size(), writer.total_bytes());
    return file;
  }

  testing::TempDir dir_;
  std::unique_ptr<Engine> source_;
  const std::string path_ = dir_.Sub("backup");
};

TEST_F(BackupTest, FileIsPagesPlusDigestAndSummarised) {
  const std::string file = ReadAll(path_);
  EXPECT_EQ(file.size() % 512, 32u);
  auto summary = InspectBackup(path_);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->revision, 2);
  EXPECT_EQ(summary->keys, 1u);
  EXPECT_EQ(summary->leases, 1u);
  EXPECT_EQ(summary->records, 3u);  // lease, key, rev
}

TEST_F(BackupTest, RestoreCarriesReplicatedRecordsOnly) {
  auto target = *Engine::Open(dir_.Sub("target"));
  ASSERT_TRUE(RestoreBackup(path_, target.get()).ok());
  EXPECT_EQ(*target->Get(keys::Revision({2, 0})), *source_->Get(keys::Revision({2, 0})));
  EXPECT_EQ(*target->GetMetaU64("rev"), 2u);
  EXPECT_EQ(*target->GetMetaU64("ci"), 0u);
  EXPECT_TRUE(absl::IsNotFound(target->Get(keys::Meta("member/x")).status()));
  EXPECT_TRUE(absl::IsNotFound(target->Get(keys::Meta("identity")).status()));
  EXPECT_TRUE(absl::IsNotFound(target->Get(keys::LogEntry(5)).status()));
  internalpb::LeaseRecord lease;
  ASSERT_TRUE(lease.ParseFromString(*target->Get(keys::Lease(7))));
  EXPECT_EQ(lease.ttl_seconds(), 60);
  EXPECT_EQ(lease.deadline_unix_ms(), 0);  // its full TTL comes from the new cluster's leader
}

TEST_F(BackupTest, RestoreNeedsAnEmptyEngine) {
  EXPECT_TRUE(absl::IsFailedPrecondition(RestoreBackup(path_, source_.get()).status()));
}

TEST_F(BackupTest, DamagedFilesAreRefusedAndNothingIsWritten) {
  const std::string file = ReadAll(path_);
  std::string flipped = file;
  flipped[30] ^= 1;
  std::string huge_key = file;  // a record claiming a 4 GiB key, with a digest that matches
  for (int i = 0; i < 4; ++i) huge_key[19 + i] = '\xff';
  huge_key = Redigest(huge_key);
  std::string dirty_padding = file;
  dirty_padding[file.size() - 33] = 'x';
  dirty_padding = Redigest(dirty_padding);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"flipped", flipped}, {"truncated", file.substr(0, file.size() - 1)}, {"empty", ""},
      {"foreign", std::string(544, 'z')}, {"huge-key", huge_key},
      {"dirty-padding", dirty_padding}};
  for (const auto& [name, data] : cases) {
    const std::string path = dir_.Sub(name);
    WriteAll(path, data);
    EXPECT_FALSE(InspectBackup(path).ok()) << name;
    auto target = *Engine::Open(dir_.Sub("target-" + name));
    EXPECT_FALSE(RestoreBackup(path, target.get()).ok()) << name;
    auto it = target->NewIterator();
    it->SeekToFirst();
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), keys::Meta("format")) << name;
    it->Next();
    EXPECT_FALSE(it->Valid()) << name << ": restore wrote records from a refused file";
  }
  EXPECT_TRUE(absl::IsNotFound(InspectBackup(dir_.Sub("absent")).status()));
}

}  // namespace
}  // namespace leasehold::storage
