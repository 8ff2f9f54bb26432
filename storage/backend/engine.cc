#include "storage/backend/engine.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "rocksdb/env.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "storage/backend/wal_file_system.h"

namespace leasehold::storage {
namespace {

// "leasehold/2": the log under 'w' holds Raft entries (format 1 held a single-node log).
constexpr std::string_view kFormatMarker = "leasehold/2";

absl::Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return absl::OkStatus();
  if (s.IsCorruption()) return absl::DataLossError("storage corrupted: " + s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(s.ToString());
  return absl::InternalError("storage: " + s.ToString());
}

// Creates `dir` and any missing parents, each readable by the owner only (etcd's 0700 for its data
// dir): a database of leases, keys and password hashes is nobody else's business.
absl::Status MakePrivateDirs(const std::filesystem::path& dir) {
  std::filesystem::path path;
  for (const std::filesystem::path& part : dir) {
    path /= part;
    if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError("cannot create data dir " + path.string() + ": " +
                                           std::strerror(errno));
    }
  }
  return absl::OkStatus();
}

// Where a data dir's write-ahead log is kept, written when the data dir is made: RocksDB itself
// would open a database whose log is elsewhere as if its latest writes had never been made.
constexpr char kWalDirRecord[] = "LEASEHOLD_WAL_DIR";

std::string Canonical(const std::string& path) {
  if (path.empty()) return "";
  std::error_code ec;
  std::filesystem::path canonical =
      std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return ec ? path : canonical.string();
}

// A fresh data dir records `wal_dir` (empty: the log stays in the data dir); an existing one must
// be opened with the log folder it recorded (none recorded: the data dir itself, as before there
// was a choice).
absl::Status CheckWalDir(const std::string& dir, const std::string& wal_dir) {
  const std::filesystem::path record = std::filesystem::path(dir) / kWalDirRecord;
  const std::string wanted = Canonical(wal_dir);
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(dir) / "CURRENT", ec) &&
      !std::filesystem::exists(record, ec)) {
    std::ofstream out(record, std::ios::trunc);
    out << wanted;
    out.flush();
    if (!out) return absl::FailedPreconditionError("cannot write " + record.string());
    return absl::OkStatus();
  }
  std::string recorded;
  if (std::ifstream in(record); in) std::getline(in, recorded);
  if (recorded == wanted) return absl::OkStatus();
  auto where = [&dir](const std::string& logs) {
    return logs.empty() ? "in the data dir itself (no --wal-dir)"
                        : "in " + logs + " (--wal-dir " + logs + ")";
  };
  return absl::FailedPreconditionError("data dir " + dir + " keeps its write-ahead log " +
                                       where(recorded) + ", not " + where(wanted) +
                                       ": opened there, its latest writes would be missing");
}

}  // namespace

void AppendBigEndian64(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((v >> shift) & 0xff));
}

uint64_t ReadBigEndian64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

namespace keys {
std::string Revision(const storage::Revision& rev) {
  std::string k(1, kRevisionPrefix);
  AppendBigEndian64(&k, static_cast<uint64_t>(rev.main));
  AppendBigEndian64(&k, static_cast<uint64_t>(rev.sub));
  return k;
}
std::string Lease(int64_t id) {
  std::string k(1, kLeasePrefix);
  AppendBigEndian64(&k, static_cast<uint64_t>(id));
  return k;
}
std::string LogEntry(uint64_t index) {
  std::string k(1, kLogPrefix);
  AppendBigEndian64(&k, index);
  return k;
}
std::string Meta(std::string_view name) { return "m" + std::string(name); }
}  // namespace keys

absl::StatusOr<std::unique_ptr<Engine>> Engine::Open(
    const std::string& dir, const std::string& wal_dir,
    std::shared_ptr<rocksdb::FileSystem> base_file_system) {
  std::error_code ec;
  bool existed = std::filesystem::exists(dir, ec);
  if (existed && !std::filesystem::is_directory(dir, ec)) {
    return absl::FailedPreconditionError("data dir " + dir + " is not a directory");
  }
  if (existed && !std::filesystem::is_empty(dir, ec) &&
      !std::filesystem::exists(std::filesystem::path(dir) / "CURRENT", ec) &&
      !std::filesystem::exists(std::filesystem::path(dir) / kWalDirRecord, ec)) {
    return absl::FailedPreconditionError("data dir " + dir +
                                         " is not empty and holds no Leasehold database");
  }
  if (!existed) {
    if (absl::Status st = MakePrivateDirs(dir); !st.ok()) return st;
  }
  if (!wal_dir.empty()) {
    if (std::filesystem::exists(wal_dir, ec) && !std::filesystem::is_directory(wal_dir, ec)) {
      return absl::FailedPreconditionError("wal dir " + wal_dir + " is not a directory");
    }
    if (absl::Status st = MakePrivateDirs(wal_dir); !st.ok()) return st;
  }
  if (absl::Status st = CheckWalDir(dir, wal_dir); !st.ok()) return st;
  rocksdb::Options options;
  options.wal_dir = wal_dir;
  options.create_if_missing = true;
  if (base_file_system == nullptr) base_file_system = rocksdb::FileSystem::Default();
  auto file_system = std::make_shared<WalFileSystem>(base_file_system);
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(file_system);
  options.env = env.get();
  options.paranoid_checks = true;
  options.IncreaseParallelism(2);
  options.max_background_jobs = 2;
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &raw);
  if (!s.ok()) return FromRocks(s);
  auto engine = std::unique_ptr<Engine>(new Engine(std::move(file_system), std::move(env),
                                                   std::unique_ptr<rocksdb::DB>(raw),
                                                   wal_dir.empty() ? dir : wal_dir));

  auto marker = engine->Get(keys::Meta("format"));
  if (marker.ok()) {
    if (*marker != kFormatMarker) {
      return absl::FailedPreconditionError("data dir " + dir + " has unknown format '" + *marker +
                                           "'");
    }
  } else if (absl::IsNotFound(marker.status())) {
    // A fresh database, or a foreign RocksDB: a foreign one already has records.
    auto it = engine->NewIterator();
    it->SeekToFirst();
    if (it->Valid()) {
      return absl::FailedPreconditionError("data dir " + dir +
                                           " holds a database that is not Leasehold's");
    }
    rocksdb::WriteBatch batch;
    batch.Put(keys::Meta("format"), std::string(kFormatMarker));
    if (auto st = engine->Write(&batch, true); !st.ok()) return st;
  } else {
    return marker.status();
  }
  return engine;
}

namespace keys {
bool IsMemberLocal(std::string_view key) {
  if (key.empty()) return true;
  if (key[0] == kLogPrefix) return true;
  for (std::string_view local : {"format", "identity", "raft_hard_state", "raft_snapshot"}) {
    if (key == Meta(local)) return true;
  }
  return false;
}
}  // namespace keys

absl::Status Engine::Write(rocksdb::WriteBatch* batch, bool sync) {
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  return FromRocks(db_->Write(wo, batch));
}

absl::StatusOr<std::string> Engine::Get(std::string_view key) const {
  std::string value;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), rocksdb::Slice(key.data(), key.size()), &value);
  if (!s.ok()) return FromRocks(s);
  return value;
}

std::unique_ptr<rocksdb::Iterator> Engine::NewIterator() const {
  return std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(rocksdb::ReadOptions()));
}

std::unique_ptr<rocksdb::Iterator> Engine::NewIterator(std::string_view upper_bound) const {
  // ReadOptions only points at the bound: it lives on the heap and goes with the iterator.
  struct Bound {
    std::string key;
    rocksdb::Slice slice;
  };
  auto* bound = new Bound{std::string(upper_bound), {}};
  bound->slice = rocksdb::Slice(bound->key);
  rocksdb::ReadOptions options;
  options.iterate_upper_bound = &bound->slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options));
  it->RegisterCleanup(
      +[](void* arg, void*) { delete static_cast<Bound*>(arg); }, bound, nullptr);
  return it;
}

int64_t Engine::PinnedViews() const {
  uint64_t count = 0;
  return db_->GetIntProperty("rocksdb.num-snapshots", &count) ? static_cast<int64_t>(count) : 0;
}

std::shared_ptr<const rocksdb::Snapshot> Engine::Pin() const {
  rocksdb::DB* db = db_.get();
  return std::shared_ptr<const rocksdb::Snapshot>(
      db->GetSnapshot(), [db](const rocksdb::Snapshot* s) { db->ReleaseSnapshot(s); });
}

std::unique_ptr<rocksdb::Iterator> Engine::NewIterator(const rocksdb::Snapshot* view) const {
  rocksdb::ReadOptions options;
  options.snapshot = view;
  return std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(options));
}

absl::Status Engine::CompactAll() {
  rocksdb::CompactRangeOptions options;
  options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  rocksdb::Status st = db_->CompactRange(options, nullptr, nullptr);
  if (!st.ok()) return absl::InternalError("compaction failed: " + st.ToString());
  return absl::OkStatus();
}

uint64_t Engine::LogBytes() const {
  uint64_t wal = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(log_dir_, ec)) {
    if (entry.path().extension() != ".log") continue;
    // The open log is preallocated: count what it holds, not its size.
    std::optional<uint64_t> held = file_system_->OpenLogBytes(entry.path().filename().string());
    wal += held ? *held : entry.file_size(ec);
  }
  return wal;
}

int64_t Engine::ApproximateSize() const {
  uint64_t sst = 0;
  db_->GetIntProperty("rocksdb.total-sst-files-size", &sst);
  return static_cast<int64_t>(sst + LogBytes());
}

int64_t Engine::ApproximateLiveSize() const {
  uint64_t live = 0;
  db_->GetIntProperty("rocksdb.estimate-live-data-size", &live);
  return static_cast<int64_t>(live + LogBytes());
}

absl::StatusOr<uint64_t> Engine::GetMetaU64(std::string_view name) const {
  auto v = Get(keys::Meta(name));
  if (absl::IsNotFound(v.status())) return 0;
  if (!v.ok()) return v.status();
  if (v->size() != 8) return absl::DataLossError("bad metadata record " + std::string(name));
  return ReadBigEndian64(*v);
}

void Engine::PutMetaU64(rocksdb::WriteBatch* batch, std::string_view name, uint64_t value) {
  std::string v;
  AppendBigEndian64(&v, value);
  batch->Put(keys::Meta(name), v);
}

}  // namespace leasehold::storage
