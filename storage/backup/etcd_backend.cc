#include "storage/backup/etcd_backend.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>

#include "common/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "leasehold/internal.pb.h"
#include "storage/auth/auth_table.h"
#include "storage/backend/engine.h"
#include "storage/backend/revision.h"
#include "storage/backup/bolt_file.h"

namespace leasehold::storage {
namespace {

using RecordFn = std::function<absl::Status(std::string_view, std::string_view)>;

// etcd's bucket and key names (its mvcc, lease and auth packages).
constexpr std::string_view kKeyBucket = "key";
constexpr std::string_view kMetaBucket = "meta";
constexpr std::string_view kLeaseBucket = "lease";
constexpr std::string_view kAuthBucket = "auth";
constexpr std::string_view kUsersBucket = "authUsers";
constexpr std::string_view kRolesBucket = "authRoles";
constexpr std::string_view kClusterBucket = "cluster";
constexpr std::string_view kFinishedCompact = "finishedCompactRev";
constexpr std::string_view kStorageVersion = "storageVersion";  // etcd 3.6 and later
constexpr std::string_view kClusterVersion = "clusterVersion";
constexpr std::string_view kAuthEnabled = "authEnabled";
constexpr std::string_view kAuthRevision = "authRevision";
// A revision key: main (8 bytes, big-endian), '_', sub (8 bytes), and 't' for a deletion.
constexpr size_t kRevisionBytes = 17;
constexpr char kPutFlag = 'p';  // as the MVCC store marks its versions
constexpr char kTombstoneFlag = 't';

absl::Status Malformed(const std::string& path, std::string_view what) {
  return absl::DataLossError(path + ": malformed etcd " + std::string(what));
}

std::string U64(uint64_t value) {
  std::string out;
  AppendBigEndian64(&out, value);
  return out;
}

// The visit of bucket `name`, where an absent bucket is an empty one (etcd creates the auth and
// lease buckets lazily in older versions).
absl::Status ForEachIfPresent(std::string_view file, std::string_view name, const RecordFn& visit) {
  absl::Status st = ForEachInBoltBucket(file, name, visit);
  return absl::IsNotFound(st) ? absl::OkStatus() : st;
}

// "3.4.0" -> true when etcd 3.0 to 3.6 wrote it: the versions whose backend this reader knows.
bool KnownVersion(std::string_view version) {
  int major = 0, minor = 0;
  const char* end = version.data() + version.size();
  auto [after_major, major_error] = std::from_chars(version.data(), end, major);
  if (major_error != std::errc() || after_major == end || *after_major != '.') return false;
  auto [after_minor, minor_error] = std::from_chars(after_major + 1, end, minor);
  return minor_error == std::errc() && major == 3 && minor <= 6;
}

absl::Status CheckVersion(std::string_view file, const std::string& path) {
  std::optional<std::string> version;
  auto take = [&](std::string_view wanted) {
    return [&, wanted](std::string_view key, std::string_view value) {
      if (key == wanted) version = std::string(value);
      return absl::OkStatus();
    };
  };
  RETURN_IF_ERROR(ForEachIfPresent(file, kMetaBucket, take(kStorageVersion)));
  if (!version.has_value())
    RETURN_IF_ERROR(ForEachIfPresent(file, kClusterBucket, take(kClusterVersion)));
  if (version.has_value() && !KnownVersion(*version)) {
    return absl::FailedPreconditionError(path + " was written by etcd " + *version +
                                         ", whose storage this version of Leasehold does not read "
                                         "(it reads etcd 3.0 to 3.6)");
  }
  return absl::OkStatus();
}

// etcd's leasepb.Lease: ID = 1, TTL = 2, RemainingTTL = 3 (all int64 varints).
absl::StatusOr<internalpb::LeaseRecord> ParseEtcdLease(std::string_view value,
                                                       const std::string& path) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(value.data()),
                                            static_cast<int>(value.size()));
  internalpb::LeaseRecord lease;
  while (uint32_t tag = in.ReadTag()) {
    uint64_t field;
    if ((tag & 7) != 0 || !in.ReadVarint64(&field)) {
      // Only varints are etcd's; anything else would be a newer field of another wire type.
      if (!google::protobuf::internal::WireFormatLite::SkipField(&in, tag))
        return Malformed(path, "lease");
      continue;
    }
    switch (tag >> 3) {
      case 1:
        lease.set_id(static_cast<int64_t>(field));
        break;
      case 2:
        lease.set_ttl_seconds(static_cast<int64_t>(field));
        break;
      case 3:
        lease.set_remaining_ttl_seconds(static_cast<int64_t>(field));
        break;
      default:
        break;
    }
  }
  if (!in.ConsumedEntireMessage() || lease.id() == 0 || lease.ttl_seconds() <= 0) {
    return Malformed(path, "lease");
  }
  return lease;
}

}  // namespace

bool IsEtcdBackend(std::string_view file) {
  auto nothing = [](std::string_view, std::string_view) { return absl::OkStatus(); };
  return ForEachInBoltBucket(file, kKeyBucket, nothing).ok() &&
         ForEachInBoltBucket(file, kMetaBucket, nothing).ok();
}

absl::Status ForEachRecordOfEtcdBackend(std::string_view file, const std::string& path,
                                        const RecordFn& record) {
  RETURN_IF_ERROR(CheckVersion(file, path));
  int64_t newest = 0;
  RETURN_IF_ERROR(
      ForEachInBoltBucket(file, kKeyBucket, [&](std::string_view key, std::string_view value) {
        const bool tombstone = key.size() == kRevisionBytes + 1 && key.back() == 't';
        if ((key.size() != kRevisionBytes && !tombstone) || key[8] != '_')
          return Malformed(path, "revision key");
        const Revision revision{static_cast<int64_t>(ReadBigEndian64(key.substr(0, 8))),
                                static_cast<int64_t>(ReadBigEndian64(key.substr(9, 8)))};
        newest = std::max(newest, revision.main);
        std::string version(1, tombstone ? kTombstoneFlag : kPutFlag);
        version.append(value);
        return record(keys::Revision(revision), version);
      }));
  int64_t compacted = -1;
  RETURN_IF_ERROR(
      ForEachInBoltBucket(file, kMetaBucket, [&](std::string_view key, std::string_view value) {
        if (key != kFinishedCompact) return absl::OkStatus();
        if (value.size() < 8) return Malformed(path, "compaction revision");
        compacted = static_cast<int64_t>(ReadBigEndian64(value.substr(0, 8)));
        return absl::OkStatus();
      }));
  if (compacted >= 0) RETURN_IF_ERROR(record(keys::Meta("compact"), U64(compacted)));
  RETURN_IF_ERROR(record(keys::Meta("rev"), U64(std::max(newest, compacted))));
  RETURN_IF_ERROR(
      ForEachIfPresent(file, kLeaseBucket, [&](std::string_view key, std::string_view value) {
        ASSIGN_OR_RETURN(internalpb::LeaseRecord lease, ParseEtcdLease(value, path));
        if (key.size() != 8 || static_cast<int64_t>(ReadBigEndian64(key)) != lease.id())
          return Malformed(path, "lease key");
        return record(keys::Lease(lease.id()), lease.SerializeAsString());
      }));
  bool auth_enabled = false;
  uint64_t auth_revision = 0;
  RETURN_IF_ERROR(
      ForEachIfPresent(file, kAuthBucket, [&](std::string_view key, std::string_view value) {
        if (key == kAuthEnabled) {
          if (value.size() != 1) return Malformed(path, "auth flag");
          auth_enabled = value[0] == 1;
        } else if (key == kAuthRevision) {
          if (value.size() != 8) return Malformed(path, "auth revision");
          auth_revision = ReadBigEndian64(value);
        }
        return absl::OkStatus();
      }));
  RETURN_IF_ERROR(record(AuthTable::EnabledKey(), U64(auth_enabled ? 1 : 0)));
  RETURN_IF_ERROR(record(AuthTable::RevisionKey(), U64(auth_revision)));
  // No token from before the move exists here: auth counts as enabled since the move.
  if (auth_enabled) RETURN_IF_ERROR(record(AuthTable::EnabledRevisionKey(), U64(auth_revision)));
  RETURN_IF_ERROR(
      ForEachIfPresent(file, kUsersBucket, [&](std::string_view name, std::string_view user) {
        return record(AuthTable::UserKey(name), user);
      }));
  return ForEachIfPresent(file, kRolesBucket, [&](std::string_view name, std::string_view role) {
    return record(AuthTable::RoleKey(name), role);
  });
}

}  // namespace leasehold::storage
