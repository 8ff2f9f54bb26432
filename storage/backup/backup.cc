#include "storage/backup/backup.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "leasehold/internal.pb.h"
#include "mvccpb/kv.pb.h"
#include "storage/backend/raft_log_store.h"
#include "storage/backup/bolt_file.h"
#include "storage/backup/etcd_backend.h"
#include "storage/cluster/alarm_table.h"
#include "storage/cluster/member_table.h"

namespace leasehold::storage {
namespace {

constexpr std::string_view kMagic = "LEASEHOLD-BACKUP 1\n";
constexpr size_t kDigestBytes = 32;
constexpr size_t kPageBytes = 512;

uint32_t ReadU32(std::string_view in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

// Records a backup carries: the replicated ones, less membership (the member table and Raft's
// voters) and alarms, since a restored member founds a new cluster with new member ids, and the
// applied index (the old cluster's log's).
bool IsBackedUp(std::string_view key) {
  if (keys::IsMemberLocal(key) || RaftLogStore::IsConfStateKey(key)) return false;
  if (key == keys::Meta("ci") || AlarmTable::IsAlarmKey(key)) return false;
  return !MemberTable::IsMembershipKey(key);
}

// etcd's schema for what its tools read from a snapshot: bucket "key" maps a revision (main, '_',
// sub, and 't' for a deletion, big-endian) to the mvccpb.KeyValue; "lease" maps a lease id to a
// leasepb.Lease; "meta" holds the compaction revisions and the consistent index.
constexpr std::string_view kEtcdKeyBucket = "key";
constexpr std::string_view kEtcdLeaseBucket = "lease";
constexpr std::string_view kEtcdMetaBucket = "meta";
// Everything else Leasehold needs to restore (leases with their records, auth, blob leases, the
// revision), as its own records.
constexpr std::string_view kLeaseholdBucket = "leasehold";
constexpr char kPutFlag = 'p';  // as the MVCC store marks its versions
constexpr char kTombstoneFlag = 't';

std::string EtcdRevisionKey(std::string_view main_and_sub, bool tombstone) {
  std::string key(main_and_sub.substr(0, 8));
  key.push_back('_');
  key.append(main_and_sub.substr(8, 8));
  if (tombstone) key.push_back('t');
  return key;
}

// leasepb.Lease: ID = 1, TTL = 2 (int64 varints; RemainingTTL = 3 stays unset, as without
// checkpoints).
std::string EtcdLease(const internalpb::LeaseRecord& lease) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  if (lease.id() != 0) {
    coded.WriteTag(1 << 3);
    coded.WriteVarint64(static_cast<uint64_t>(lease.id()));
  }
  if (lease.ttl_seconds() != 0) {
    coded.WriteTag(2 << 3);
    coded.WriteVarint64(static_cast<uint64_t>(lease.ttl_seconds()));
  }
  coded.Trim();
  return out;
}

absl::StatusOr<std::string> BuildBackup(const Engine& engine, const rocksdb::Snapshot* view) {
  std::vector<std::pair<std::string, std::string>> revisions, leases, own;
  int64_t compacted = 0;
  uint64_t applied = 0;
  auto it = engine.NewIterator(view);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    const std::string_view value(it->value().data(), it->value().size());
    if (key == keys::Meta("ci") && value.size() == 8) applied = ReadBigEndian64(value);
    if (!IsBackedUp(key)) continue;
    if (key.size() == 17 && key[0] == keys::kRevisionPrefix) {
      if (value.empty()) return absl::DataLossError("empty version record in the backup view");
      revisions.emplace_back(EtcdRevisionKey(key.substr(1), value[0] == kTombstoneFlag),
                             value.substr(1));
      continue;
    }
    if (key.size() == 9 && key[0] == keys::kLeasePrefix) {
      internalpb::LeaseRecord lease;
      if (!lease.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
        return absl::DataLossError("malformed lease record in the backup view");
      }
      leases.emplace_back(key.substr(1), EtcdLease(lease));
    }
    if (key == keys::Meta("compact") && value.size() == 8)
      compacted = static_cast<int64_t>(ReadBigEndian64(value));
    own.emplace_back(key, value);
  }
  if (!it->status().ok())
    return absl::DataLossError("reading the backup view: " + it->status().ToString());

  BoltFileBuilder bolt;  // buckets in name order: key, lease, leasehold, meta
  bolt.AddBucket(kEtcdKeyBucket);
  for (auto& [key, value] : revisions) bolt.Put(std::move(key), std::move(value));
  bolt.AddBucket(kEtcdLeaseBucket);
  for (auto& [key, value] : leases) bolt.Put(std::move(key), std::move(value));
  bolt.AddBucket(kLeaseholdBucket);
  for (auto& [key, value] : own) bolt.Put(std::move(key), std::move(value));
  bolt.AddBucket(kEtcdMetaBucket);
  std::string index;
  AppendBigEndian64(&index, applied);
  bolt.Put("consistent_index", index);
  if (compacted > 0) {
    std::string rev;
    AppendBigEndian64(&rev, static_cast<uint64_t>(compacted));
    const std::string compact_key = EtcdRevisionKey(rev + std::string(8, '\0'), false);
    bolt.Put("finishedCompactRev", compact_key);
    bolt.Put("scheduledCompactRev", compact_key);
  }
  std::string file = bolt.Finish();
  Sha256 sha;
  sha.Update(file);
  file.append(sha.Final());
  return file;
}

}  // namespace

BackupWriter::BackupWriter(const Engine& engine) {
  absl::StatusOr<std::string> file = BuildBackup(engine, engine.Pin().get());
  if (file.ok()) {
    file_ = std::move(*file);
  } else {
    error_ = file.status();
  }
  total_bytes_ = file_.size();
}

BackupWriter::~BackupWriter() = default;

absl::StatusOr<bool> BackupWriter::Next(size_t chunk_bytes, std::string* out) {
  out->clear();
  if (!error_.ok()) return error_;
  if (written_bytes_ == total_bytes_) return false;
  *out = file_.substr(written_bytes_, std::max<size_t>(1, chunk_bytes));
  written_bytes_ += out->size();
  return true;
}

namespace {

using RecordFn = std::function<absl::Status(std::string_view, std::string_view)>;

// Files written before backups were bbolt files: the magic line, then [u32 big-endian key length]
// [key][u32 value length][value] per record in key order, a zero key length, and zero padding to a
// multiple of 512 bytes (the digest follows, already checked).
absl::Status WalkFramed(std::string_view body, const std::string& path, const RecordFn& record) {
  size_t pos = kMagic.size();
  while (true) {
    if (body.size() - pos < 4) return absl::DataLossError(path + ": bad record framing");
    const uint32_t key_size = ReadU32(body.substr(pos));
    pos += 4;
    if (key_size == 0) break;  // the end marker; only padding follows
    if (body.size() - pos < static_cast<uint64_t>(key_size) + 4)
      return absl::DataLossError(path + ": bad record framing");
    const std::string_view key = body.substr(pos, key_size);
    pos += key_size;
    const uint32_t value_size = ReadU32(body.substr(pos));
    pos += 4;
    if (body.size() - pos < value_size) return absl::DataLossError(path + ": bad record framing");
    const std::string_view value = body.substr(pos, value_size);
    pos += value_size;
    RETURN_IF_ERROR(record(key, value));
  }
  if (body.size() - pos >= kPageBytes ||
      body.find_first_not_of('\0', pos) != std::string_view::npos) {
    return absl::DataLossError(path + ": bad padding after the records");
  }
  return absl::OkStatus();
}

// A bbolt backup: Leasehold's own records from its bucket, with the versions (kept once, in etcd's
// "key" bucket) put back in their place in key order.
absl::Status WalkBolt(std::string_view body, const std::string& path, const RecordFn& record) {
  std::vector<std::pair<std::string_view, std::string_view>> own;
  const absl::Status own_read = ForEachInBoltBucket(
      body, kLeaseholdBucket, [&](std::string_view key, std::string_view value) {
        if (!key.empty() && key[0] == keys::kRevisionPrefix) {
          return absl::DataLossError(path + ": a version outside the key bucket");
        }
        own.emplace_back(key, value);
        return absl::OkStatus();
      });
  if (absl::IsNotFound(own_read)) {
    if (IsEtcdBackend(body)) return ForEachRecordOfEtcdBackend(body, path, record);
    return absl::InvalidArgumentError(
        path + " is a bbolt file that is neither a Leasehold backup nor an etcd backend");
  }
  RETURN_IF_ERROR(own_read);
  auto next_own = own.begin();
  for (; next_own != own.end() && next_own->first < std::string_view(&keys::kRevisionPrefix, 1);
       ++next_own) {
    RETURN_IF_ERROR(record(next_own->first, next_own->second));
  }
  RETURN_IF_ERROR(
      ForEachInBoltBucket(body, kEtcdKeyBucket, [&](std::string_view key, std::string_view value) {
        const bool tombstone = key.size() == 18 && key[17] == 't';
        if ((key.size() != 17 && !tombstone) || key[8] != '_')
          return absl::DataLossError(path + ": malformed revision key");
        const std::string own_key = std::string(1, keys::kRevisionPrefix) +
                                    std::string(key.substr(0, 8)) + std::string(key.substr(9, 8));
        const std::string own_value =
            std::string(1, tombstone ? kTombstoneFlag : kPutFlag) + std::string(value);
        return record(own_key, own_value);
      }));
  for (; next_own != own.end(); ++next_own)
    RETURN_IF_ERROR(record(next_own->first, next_own->second));
  return absl::OkStatus();
}

// Reads a whole backup file into memory, checks its digest and structure, and calls `record` for
// each of its records in key order.
template <typename OnRecord>
absl::StatusOr<BackupSummary> Walk(const std::string& path, OnRecord record) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError("cannot read " + path);
  const bool bolt = LooksLikeBoltFile(data);
  if ((!bolt && !std::string_view(data).starts_with(kMagic)) ||
      data.size() < kMagic.size() + kDigestBytes) {
    return absl::InvalidArgumentError(path + " is not a Leasehold backup or an etcd snapshot");
  }
  // A bbolt file is whole pages (512 bytes at least): one 32 bytes longer carries its digest, as
  // `etcdctl snapshot save` writes it; the db of an etcd data dir has none.
  const bool has_digest = !bolt || data.size() % 512 == kDigestBytes;
  if (!has_digest && data.size() % 512 != 0) {
    return absl::DataLossError(path + ": not whole pages (the file is truncated or corrupt)");
  }
  const std::string_view body(data.data(), data.size() - (has_digest ? kDigestBytes : 0));
  Sha256 sha;
  sha.Update(body);
  const std::string digest = sha.Final();
  if (has_digest && digest != std::string_view(data).substr(body.size())) {
    return absl::DataLossError(path + ": digest mismatch (the file is truncated or corrupt)");
  }
  BackupSummary summary;
  summary.sha256_hex = absl::BytesToHexString(digest);
  summary.bytes = data.size();
  absl::flat_hash_map<std::string, bool> live;  // key -> latest version is a put
  auto tally = [&](std::string_view key, std::string_view value) -> absl::Status {
    // Backups from earlier versions carry the old cluster's voters, which left a restored
    // member waiting for a vote from a member that is not there: dropped.
    if (RaftLogStore::IsConfStateKey(key)) return absl::OkStatus();
    if (key.empty() || !IsBackedUp(key))
      return absl::DataLossError(path + ": holds a record a backup never carries");
    ++summary.records;
    if (key[0] == keys::kLeasePrefix) ++summary.leases;
    if (key[0] == keys::kRevisionPrefix && !value.empty()) {
      mvccpb::KeyValue kv;
      if (!kv.ParseFromArray(value.data() + 1, static_cast<int>(value.size() - 1))) {
        return absl::DataLossError(path + ": malformed key record");
      }
      live[kv.key()] = value[0] == kPutFlag;
    }
    if (key == keys::Meta("rev") && value.size() == 8) {
      summary.revision = static_cast<int64_t>(ReadBigEndian64(value));
    }
    return record(key, value);
  };
  RETURN_IF_ERROR(bolt ? WalkBolt(body, path, tally) : WalkFramed(body, path, tally));
  for (const auto& [key, alive] : live) summary.keys += alive ? 1 : 0;
  return summary;
}

}  // namespace

absl::StatusOr<BackupSummary> InspectBackup(const std::string& path) {
  return Walk(path, [](std::string_view, std::string_view) { return absl::OkStatus(); });
}

absl::StatusOr<BackupSummary> RestoreBackup(const std::string& path, Engine* engine) {
  auto probe = engine->NewIterator();
  for (probe->SeekToFirst(); probe->Valid(); probe->Next()) {
    if (probe->key() != keys::Meta("format")) {
      return absl::FailedPreconditionError("the data dir is not empty; restore needs a new one");
    }
  }
  // One pass over the file into one batch, written only once the whole file has checked out.
  rocksdb::WriteBatch batch;
  auto add = [&](std::string_view key, std::string_view value) -> absl::Status {
    if (key[0] != keys::kLeasePrefix) {
      batch.Put(key, value);
      return absl::OkStatus();
    }
    internalpb::LeaseRecord lease;
    if (!lease.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      return absl::DataLossError(path + ": malformed lease record");
    }
    lease.set_deadline_unix_ms(0);  // no deadline: a full TTL from the first leader's promotion
    batch.Put(key, lease.SerializeAsString());
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(BackupSummary summary, Walk(path, add));
  RETURN_IF_ERROR(engine->Write(&batch, /*sync=*/true));
  return summary;
}

}  // namespace leasehold::storage
