#include "storage/cluster/alarm_table.h"

namespace leasehold::storage {
namespace {

constexpr std::string_view kAlarmPrefix = "alarm/";

// Meta("alarm/") + type (1 byte) + member id (8 bytes, big-endian).
std::string AlarmKey(int type, uint64_t member_id) {
  std::string name(kAlarmPrefix);
  name.push_back(static_cast<char>(type));
  AppendBigEndian64(&name, member_id);
  return keys::Meta(name);
}

etcdserverpb::AlarmMember Member(int type, uint64_t member_id) {
  etcdserverpb::AlarmMember m;
  m.set_memberid(member_id);
  m.set_alarm(static_cast<etcdserverpb::AlarmType>(type));
  return m;
}

}  // namespace

bool AlarmTable::IsAlarmKey(std::string_view key) {
  return key.starts_with(keys::Meta(kAlarmPrefix));
}

absl::Status AlarmTable::Restore(const Engine& engine) {
  const std::string prefix = keys::Meta(kAlarmPrefix);
  absl::MutexLock lock(&mu_);
  alarms_.clear();
  auto it = engine.NewIterator();
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (it->key().size() != prefix.size() + 9) return absl::DataLossError("malformed alarm record");
    const std::string_view rest(it->key().data() + prefix.size(), 9);
    alarms_.emplace(static_cast<uint8_t>(rest[0]), ReadBigEndian64(rest.substr(1)));
  }
  if (!it->status().ok())
    return absl::DataLossError("alarm scan failed: " + it->status().ToString());
  return absl::OkStatus();
}

std::optional<etcdserverpb::AlarmMember> AlarmTable::Activate(uint64_t member_id,
                                                              etcdserverpb::AlarmType type,
                                                              rocksdb::WriteBatch* batch) {
  if (type == etcdserverpb::NONE || !etcdserverpb::AlarmType_IsValid(type)) return std::nullopt;
  absl::MutexLock lock(&mu_);
  if (alarms_.emplace(type, member_id).second) batch->Put(AlarmKey(type, member_id), "");
  return Member(type, member_id);
}

std::optional<etcdserverpb::AlarmMember> AlarmTable::Deactivate(uint64_t member_id,
                                                                etcdserverpb::AlarmType type,
                                                                rocksdb::WriteBatch* batch) {
  absl::MutexLock lock(&mu_);
  if (alarms_.erase({type, member_id}) == 0) return std::nullopt;
  batch->Delete(AlarmKey(type, member_id));
  return Member(type, member_id);
}

std::vector<etcdserverpb::AlarmMember> AlarmTable::List(etcdserverpb::AlarmType type) const {
  absl::MutexLock lock(&mu_);
  std::vector<etcdserverpb::AlarmMember> out;
  for (const auto& [t, member_id] : alarms_) {
    if (type == etcdserverpb::NONE || t == type) out.push_back(Member(t, member_id));
  }
  return out;
}

bool AlarmTable::Raised(etcdserverpb::AlarmType type) const {
  absl::MutexLock lock(&mu_);
  auto it = alarms_.lower_bound({type, 0});
  return it != alarms_.end() && it->first == type;
}

}  // namespace leasehold::storage
