#include "storage/backup.h"

#include <fstream>
#include <iterator>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "leasehold/internal.pb.h"
#include "mvccpb/kv.pb.h"
#include "storage/alarm_table.h"
#include "storage/sha256.h"
#include "storage/status_macros.h"

namespace leasehold::storage {
namespace {

constexpr std::string_view kMagic = "LEASEHOLD-BACKUP 1\n";
constexpr size_t kDigestBytes = 32;
constexpr size_t kEndMarkerBytes = 4;
constexpr size_t kPageBytes = 512;

uint64_t PaddedSize(uint64_t bytes) { return (bytes + kPageBytes - 1) / kPageBytes * kPageBytes; }

void AppendU32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

uint32_t ReadU32(std::string_view in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

uint64_t FramedSize(size_t key_bytes, size_t value_bytes) { return 8 + key_bytes + value_bytes; }

// Records a backup carries: the replicated ones, less membership and alarms (a restored member
// founds a new cluster, with new member ids) and the applied index (the old cluster's log's).
bool IsBackedUp(std::string_view key) {
  if (keys::IsMemberLocal(key)) return false;
  if (key == keys::Meta("ci") || AlarmTable::IsAlarmKey(key)) return false;
  return !key.starts_with(keys::Meta("member/"));
}

}  // namespace

struct BackupWriter::Digest {
  Sha256 sha;
};

BackupWriter::BackupWriter(const Engine& engine)
    : engine_(engine), view_(engine.Pin()), digest_(std::make_unique<Digest>()) {
  uint64_t body = kMagic.size() + kEndMarkerBytes;
  auto it = engine_.NewIterator(view_.get());
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (IsBackedUp(std::string_view(it->key().data(), it->key().size()))) {
      body += FramedSize(it->key().size(), it->value().size());
    }
  }
  total_bytes_ = PaddedSize(body) + kDigestBytes;
}

BackupWriter::~BackupWriter() = default;

absl::StatusOr<bool> BackupWriter::Next(size_t chunk_bytes, std::string* out) {
  out->clear();
  if (finished_) return false;
  if (!started_) {
    started_ = true;
    out->append(kMagic);
    it_ = engine_.NewIterator(view_.get());
    it_->SeekToFirst();
  }
  for (; it_->Valid() && out->size() < chunk_bytes; it_->Next()) {
    const std::string_view key(it_->key().data(), it_->key().size());
    if (!IsBackedUp(key)) continue;
    AppendU32(out, static_cast<uint32_t>(key.size()));
    out->append(key);
    AppendU32(out, static_cast<uint32_t>(it_->value().size()));
    out->append(it_->value().data(), it_->value().size());
  }
  if (!it_->status().ok()) return absl::DataLossError("reading the backup view: " + it_->status().ToString());
  if (!it_->Valid()) {
    AppendU32(out, 0);
    out->append(PaddedSize(written_bytes_ + out->size()) - (written_bytes_ + out->size()), '\0');
  }
  digest_->sha.Update(*out);
  if (!it_->Valid()) {
    out->append(digest_->sha.Final());
    finished_ = true;
    if (written_bytes_ + out->size() != total_bytes_) {
      return absl::InternalError("backup size changed while it was written");
    }
  }
  written_bytes_ += out->size();
  return true;
}

namespace {

// Walks a whole backup file in memory, checking its framing and digest, and calls `record` for
// each record in order.
template <typename OnRecord>
absl::StatusOr<BackupSummary> Walk(const std::string& path, OnRecord record) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError("cannot read " + path);
  if (!std::string_view(data).starts_with(kMagic) || data.size() < kMagic.size() + kDigestBytes) {
    return absl::InvalidArgumentError(path + " is not a Leasehold backup");
  }
  const std::string_view body(data.data(), data.size() - kDigestBytes);
  Sha256 sha;
  sha.Update(body);
  const std::string digest = sha.Final();
  if (digest != std::string_view(data).substr(body.size())) {
    return absl::DataLossError(path + ": digest mismatch (the file is truncated or corrupt)");
  }
  BackupSummary summary;
  summary.sha256_hex = absl::BytesToHexString(digest);
  summary.bytes = data.size();
  absl::flat_hash_map<std::string, bool> live;  // key -> latest version is a put
  size_t pos = kMagic.size();
  while (true) {
    if (body.size() - pos < 4) return absl::DataLossError(path + ": bad record framing");
    const uint32_t key_size = ReadU32(body.substr(pos));
    pos += 4;
    if (key_size == 0) break;  // the end marker; only padding follows
    if (body.size() - pos < static_cast<uint64_t>(key_size) + 4) return absl::DataLossError(path + ": bad record framing");
    const std::string_view key = body.substr(pos, key_size);
    pos += key_size;
    const uint32_t value_size = ReadU32(body.substr(pos));
    pos += 4;
    if (body.size() - pos < value_size) return absl::DataLossError(path + ": bad record framing");
    const std::string_view value = body.substr(pos, value_size);
    pos += value_size;
    if (!IsBackedUp(key)) return absl::DataLossError(path + ": holds a record a backup never carries");
    ++summary.records;
    if (key[0] == keys::kLeasePrefix) ++summary.leases;
    if (key[0] == keys::kRevisionPrefix && !value.empty()) {
      mvccpb::KeyValue kv;
      if (!kv.ParseFromArray(value.data() + 1, static_cast<int>(value.size() - 1))) {
        return absl::DataLossError(path + ": malformed key record");
      }
      live[kv.key()] = value[0] == 'p';
    }
    if (key == keys::Meta("rev") && value.size() == 8) {
      summary.revision = static_cast<int64_t>(ReadBigEndian64(value));
    }
    RETURN_IF_ERROR(record(key, value));
  }
  if (body.size() - pos >= kPageBytes || body.find_first_not_of('\0', pos) != std::string_view::npos) {
    return absl::DataLossError(path + ": bad padding after the records");
  }
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
