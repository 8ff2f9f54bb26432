// Backups: what a writer produces is a bbolt file in etcd's schema that restores to the same
// replicated records (as do files in the earlier format), and damaged or foreign files are refused
// before anything is written.
#include "storage/backup/backup.h"

#include <fstream>

#include <gtest/gtest.h>
#include <openssl/sha.h>

#include "authpb/auth.pb.h"
#include "leasehold/internal.pb.h"
#include "mvccpb/kv.pb.h"
#include "storage/backend/raft_log_store.h"
#include "storage/backup/bolt_file.h"
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

// A backup as earlier versions wrote it: a magic line, [u32 BE length][key][u32 BE length][value]
// per record, a zero length, zero padding to a multiple of 512 bytes, and the SHA-256.
std::string LegacyBackup(const std::vector<std::pair<std::string, std::string>>& records) {
  std::string out = "LEASEHOLD-BACKUP 1\n";
  auto u32 = [&out](size_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
  };
  for (const auto& [key, value] : records) {
    u32(key.size());
    out += key;
    u32(value.size());
    out += value;
  }
  u32(0);
  out.append((512 - out.size() % 512) % 512, '\0');
  return Redigest(out + std::string(32, '\0'));
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
    batch.Put(keys::Revision({2, 0}), std::string("p") +
                                          "\x0a\x01"
                                          "a");  // 'p' + KeyValue{key:"a"}
    batch.Put(keys::Revision({3, 0}), std::string("p") +
                                          "\x0a\x01"
                                          "b");
    batch.Put(keys::Revision({4, 0}), std::string("t") +
                                          "\x0a\x01"
                                          "b");  // b deleted
    batch.Put("ablob-record", "a blob lease");   // sorts before the versions
    Engine::PutMetaU64(&batch, "rev", 4);
    Engine::PutMetaU64(&batch, "ci", 99);               // the old cluster's applied index
    batch.Put(keys::Meta("member/x"), "old member");    // the old cluster's membership
    batch.Put(keys::Meta("identity"), "old identity");  // this member's own
    batch.Put(keys::LogEntry(5), "a raft log entry");
    raft::pb::ConfState voters;  // the old cluster's Raft voters
    voters.add_voters(42);
    RaftLogStore::PutConfState(voters, &batch);
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
  EXPECT_EQ(summary->revision, 4);
  EXPECT_EQ(summary->keys, 1u);
  EXPECT_EQ(summary->leases, 1u);
  EXPECT_EQ(summary->records, 6u);  // blob record, 3 versions, lease, rev
}

// What etcd's snapshot status and restore read: versions under etcd's revision keys ('t' marks a
// deletion), leases as leasepb.Lease, the consistent index; nothing twice, no membership.
TEST_F(BackupTest, FileIsABoltDatabaseInEtcdSchema) {
  const std::string file = ReadAll(path_);
  const std::string_view db = std::string_view(file).substr(0, file.size() - 32);
  std::vector<std::pair<std::string, std::string>> versions, leases, meta, own;
  auto into = [](auto* out) {
    return [out](std::string_view k, std::string_view v) {
      out->emplace_back(k, v);
      return absl::OkStatus();
    };
  };
  ASSERT_TRUE(ForEachInBoltBucket(db, "key", into(&versions)).ok());
  ASSERT_TRUE(ForEachInBoltBucket(db, "lease", into(&leases)).ok());
  ASSERT_TRUE(ForEachInBoltBucket(db, "meta", into(&meta)).ok());
  ASSERT_TRUE(ForEachInBoltBucket(db, "leasehold", into(&own)).ok());
  auto rev = [](int main, bool tombstone) {
    std::string k(7, '\0');
    k += static_cast<char>(main);
    k += '_' + std::string(8, '\0');
    return tombstone ? k + "t" : k;
  };
  const std::vector<std::pair<std::string, std::string>> want_versions = {{rev(2, false),
                                                                           "\x0a\x01"
                                                                           "a"},
                                                                          {rev(3, false),
                                                                           "\x0a\x01"
                                                                           "b"},
                                                                          {rev(4, true),
                                                                           "\x0a\x01"
                                                                           "b"}};
  EXPECT_EQ(versions, want_versions);
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].first, std::string(7, '\0') + "\x07");
  EXPECT_EQ(leases[0].second, "\x08\x07\x10\x3c");  // ID: 7, TTL: 60
  ASSERT_EQ(meta.size(), 1u);
  EXPECT_EQ(meta[0].first, "consistent_index");
  EXPECT_EQ(meta[0].second, std::string(7, '\0') + "\x63");  // 99
  for (const auto& [key, value] : own) {
    EXPECT_NE(key[0], keys::kRevisionPrefix);
    EXPECT_FALSE(RaftLogStore::IsConfStateKey(key));
  }
  EXPECT_EQ(own.size(), 3u);  // blob record, lease, rev
}

TEST_F(BackupTest, RestoreCarriesReplicatedRecordsOnly) {
  auto target = *Engine::Open(dir_.Sub("target"));
  ASSERT_TRUE(RestoreBackup(path_, target.get()).ok());
  for (int64_t main : {2, 3, 4}) {
    EXPECT_EQ(*target->Get(keys::Revision({main, 0})), *source_->Get(keys::Revision({main, 0})))
        << main;
  }
  EXPECT_EQ(*target->Get("ablob-record"), "a blob lease");
  EXPECT_EQ(*target->GetMetaU64("rev"), 4u);
  // A restored member founds a new cluster: the old one's voters would wait for votes forever.
  EXPECT_TRUE(absl::IsNotFound(target->Get(keys::Meta("conf_state")).status()));
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

TEST_F(BackupTest, FilesFromEarlierVersionsStillRestore) {
  raft::pb::ConfState voters;
  voters.add_voters(42);
  const std::string legacy = dir_.Sub("legacy");
  WriteAll(legacy, LegacyBackup({{keys::Revision({2, 0}), std::string("p") + "\x0a\x01"
                                                                             "a"},
                                 {keys::Meta("conf_state"), voters.SerializeAsString()},
                                 {keys::Meta("rev"), std::string(7, '\0') + "\x02"}}));
  auto target = *Engine::Open(dir_.Sub("target"));
  auto summary = RestoreBackup(legacy, target.get());
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->keys, 1u);
  EXPECT_EQ(summary->revision, 2);
  EXPECT_EQ(*target->Get(keys::Revision({2, 0})), std::string("p") +
                                                      "\x0a\x01"
                                                      "a");
  EXPECT_TRUE(absl::IsNotFound(target->Get(keys::Meta("conf_state")).status()));
}

std::string U64(uint64_t v) {
  std::string out;
  AppendBigEndian64(&out, v);
  return out;
}

// An etcd v3 backend as etcd 3.4/3.5 lays it out: keys a (rev 2), b (rev 3, deleted at 4, under
// lease 7 before), a compaction at 2, lease 7 (TTL 60 s, 25 s left at its last checkpoint), auth on
// with user u1 and role r1. `cluster_version` goes in the cluster bucket.
std::string EtcdBackend(const std::string& cluster_version) {
  BoltFileBuilder etcd;
  etcd.AddBucket("alarm");
  etcd.AddBucket("auth");
  etcd.Put("authEnabled", std::string(1, '\x01'));
  etcd.Put("authRevision", U64(5));
  authpb::Role role;
  role.set_name("r1");
  authpb::User user;
  user.set_name("u1");
  user.set_password("$2a$10$hash");
  user.add_roles("r1");
  etcd.AddBucket("authRoles");
  etcd.Put("r1", role.SerializeAsString());
  etcd.AddBucket("authUsers");
  etcd.Put("u1", user.SerializeAsString());
  etcd.AddBucket("cluster");
  etcd.Put("clusterVersion", cluster_version);
  etcd.AddBucket("key");
  auto revision = [](uint64_t main, bool tombstone) {
    std::string key = U64(main) + "_" + U64(0);
    return tombstone ? key + "t" : key;
  };
  mvccpb::KeyValue a, b, b_deleted;
  a.set_key("a");
  a.set_value("1");
  a.set_create_revision(2);
  a.set_mod_revision(2);
  a.set_version(1);
  b = a;
  b.set_key("b");
  b.set_create_revision(3);
  b.set_mod_revision(3);
  b.set_lease(7);
  b_deleted.set_key("b");
  etcd.Put(revision(2, false), a.SerializeAsString());
  etcd.Put(revision(3, false), b.SerializeAsString());
  etcd.Put(revision(4, true), b_deleted.SerializeAsString());
  etcd.AddBucket("lease");
  etcd.Put(U64(7), std::string("\x08\x07\x10\x3c\x18\x19"));  // leasepb {ID 7, TTL 60, left 25}
  etcd.AddBucket("members");
  etcd.Put("8e9e05c52164694d", R"({"id":1,"peerURLs":["http://old:2380"]})");
  etcd.AddBucket("meta");
  etcd.Put("consistent_index", U64(42));
  etcd.Put("finishedCompactRev", revision(2, false));
  return etcd.Finish();
}

TEST_F(BackupTest, AnEtcdSnapshotRestoresItsKeysRevisionsLeasesAndUsers) {
  const std::string snapshot = dir_.Sub("etcd-snapshot");  // as `etcdctl snapshot save` writes it
  WriteAll(snapshot, Redigest(EtcdBackend("3.4.0") + std::string(32, '\0')));
  const std::string backend = dir_.Sub("etcd-db");  // as an etcd data dir's member/snap/db is
  WriteAll(backend, EtcdBackend("3.5.0"));
  for (const std::string& path : {snapshot, backend}) {
    auto target = *Engine::Open(dir_.Sub("target-" + path.substr(path.rfind('/') + 1)));
    auto summary = RestoreBackup(path, target.get());
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_EQ(summary->revision, 4);
    EXPECT_EQ(summary->keys, 1u);  // b was deleted
    EXPECT_EQ(summary->leases, 1u);
    EXPECT_EQ(*target->GetMetaU64("rev"), 4u);
    EXPECT_EQ(*target->GetMetaU64("compact"), 2u);
    EXPECT_EQ(target->Get(keys::Revision({4, 0}))->substr(0, 1), "t");
    mvccpb::KeyValue b;
    ASSERT_TRUE(b.ParseFromString(target->Get(keys::Revision({3, 0}))->substr(1)));
    EXPECT_EQ(b.lease(), 7);
    internalpb::LeaseRecord lease;
    ASSERT_TRUE(lease.ParseFromString(*target->Get(keys::Lease(7))));
    EXPECT_EQ(lease.ttl_seconds(), 60);
    EXPECT_EQ(lease.remaining_ttl_seconds(), 25);
    EXPECT_EQ(lease.deadline_unix_ms(), 0);
    EXPECT_EQ(*target->GetMetaU64("auth/enabled"), 1u);
    EXPECT_EQ(*target->GetMetaU64("auth/revision"), 5u);
    authpb::User user;
    ASSERT_TRUE(user.ParseFromString(*target->Get(keys::Meta("auth/user/u1"))));
    EXPECT_EQ(user.password(), "$2a$10$hash");
    EXPECT_TRUE(target->Get(keys::Meta("auth/role/r1")).ok());
    // The old cluster's membership and applied index stay behind.
    EXPECT_TRUE(absl::IsNotFound(target->Get(keys::Meta("ci")).status()));
  }
}

TEST_F(BackupTest, AnEtcdBackendOfAnUnknownVersionOrAForeignBoltFileIsRefused) {
  const std::string newer = dir_.Sub("etcd-3.7");
  WriteAll(newer, EtcdBackend("3.7.0"));
  auto target = *Engine::Open(dir_.Sub("target"));
  auto summary = RestoreBackup(newer, target.get());
  EXPECT_TRUE(absl::IsFailedPrecondition(summary.status())) << summary.status();
  EXPECT_NE(summary.status().message().find("written by etcd 3.7.0"), std::string_view::npos);
  auto it = target->NewIterator();
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid() && it->key() != keys::Meta("format")) << "nothing written";
  BoltFileBuilder other;  // a bbolt file of some other program
  other.AddBucket("widgets");
  const std::string path = dir_.Sub("other");
  WriteAll(path, other.Finish());
  auto inspected = InspectBackup(path);
  EXPECT_TRUE(absl::IsInvalidArgument(inspected.status())) << inspected.status();
}

TEST_F(BackupTest, DamagedFilesAreRefusedAndNothingIsWritten) {
  const std::string file = ReadAll(path_);
  std::string flipped = file;
  flipped[5000] ^= 1;
  std::string huge_pair =
      file;  // the first leaf's first key claims 4 GiB, with a digest that matches
  for (int i = 0; i < 4; ++i) huge_pair[3 * 4096 + 16 + 8 + i] = '\xff';
  huge_pair = Redigest(huge_pair);
  const std::string legacy = LegacyBackup({{keys::Meta("rev"), std::string(8, '\0')}});
  std::string legacy_huge_key = legacy;
  for (int i = 0; i < 4; ++i) legacy_huge_key[19 + i] = '\xff';
  legacy_huge_key = Redigest(legacy_huge_key);
  std::string legacy_dirty_padding = legacy;
  legacy_dirty_padding[legacy.size() - 33] = 'x';
  legacy_dirty_padding = Redigest(legacy_dirty_padding);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"flipped", flipped},
      {"truncated", file.substr(0, file.size() - 1)},
      {"empty", ""},
      {"foreign", std::string(544, 'z')},
      {"huge-pair", huge_pair},
      {"legacy-huge-key", legacy_huge_key},
      {"legacy-dirty-padding", legacy_dirty_padding}};
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
