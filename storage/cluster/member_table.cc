#include "storage/cluster/member_table.h"

#include <algorithm>

#include "common/etcd_errors.h"

namespace leasehold::storage {
namespace {
constexpr std::string_view kMemberPrefix = "member/";
constexpr std::string_view kRemovedPrefix =
    "removed_member/";  // replicated, so it travels in snapshots

std::string IdKey(std::string_view prefix, uint64_t id) {
  std::string name(prefix);
  AppendBigEndian64(&name, id);
  return keys::Meta(name);
}
std::string MemberKey(uint64_t id) { return IdKey(kMemberPrefix, id); }
}  // namespace

bool MemberTable::IsMembershipKey(std::string_view key) {
  return key.starts_with(keys::Meta(kMemberPrefix)) || key.starts_with(keys::Meta(kRemovedPrefix));
}

absl::Status MemberTable::Restore(const Engine& engine) {
  const std::string prefix = keys::Meta(kMemberPrefix);
  absl::MutexLock lock(&mu_);
  members_.clear();
  auto it = engine.NewIterator();
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    internalpb::MemberRecord record;
    if (!record.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return absl::DataLossError("malformed member record");
    }
    members_[record.id()] = std::move(record);
  }
  if (!it->status().ok()) return absl::DataLossError(it->status().ToString());
  removed_.clear();
  const std::string removed_prefix = keys::Meta(kRemovedPrefix);
  auto removed = engine.NewIterator();
  for (removed->Seek(removed_prefix);
       removed->Valid() && removed->key().starts_with(removed_prefix); removed->Next()) {
    if (removed->key().size() != removed_prefix.size() + 8)
      return absl::DataLossError("malformed removed member key");
    removed_.insert(
        ReadBigEndian64(std::string_view(removed->key().data() + removed_prefix.size(), 8)));
  }
  if (!removed->status().ok()) return absl::DataLossError(removed->status().ToString());
  return absl::OkStatus();
}

void MemberTable::ApplyConfChange(const raftpb::ConfChange& change, rocksdb::WriteBatch* batch) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = change.node_id();
  switch (change.type()) {
    case raftpb::CONF_ADD_VOTER:
    case raftpb::CONF_ADD_LEARNER: {
      internalpb::MemberRecord record;
      if (!record.ParseFromString(change.context())) record.Clear();  // unreadable: a bare record
      record.set_id(id);
      record.set_is_learner(change.type() == raftpb::CONF_ADD_LEARNER);
      if (auto it = members_.find(id); it != members_.end()) {
        // Re-adding (bootstrap replay, or a learner added as voter) keeps what was published.
        if (record.name().empty()) record.set_name(it->second.name());
        if (record.client_urls().empty()) *record.mutable_client_urls() = it->second.client_urls();
        if (record.peer_urls().empty()) *record.mutable_peer_urls() = it->second.peer_urls();
      }
      record.clear_change_id();
      members_[id] = record;
      Persist(record, batch);
      break;
    }
    case raftpb::CONF_PROMOTE_LEARNER: {
      auto it = members_.find(id);
      if (it == members_.end()) return;
      it->second.set_is_learner(false);
      Persist(it->second, batch);
      break;
    }
    case raftpb::CONF_REMOVE_NODE:
      members_.erase(id);
      batch->Delete(MemberKey(id));
      removed_.insert(id);
      batch->Put(IdKey(kRemovedPrefix, id), "");
      break;
    default:
      break;
  }
}

void MemberTable::ApplyPublish(const internalpb::MemberRecord& record, rocksdb::WriteBatch* batch) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(record.id());
  if (it == members_.end()) return;
  it->second.set_name(record.name());
  *it->second.mutable_client_urls() = record.client_urls();
  Persist(it->second, batch);
}

absl::Status MemberTable::ApplyUpdate(const internalpb::MemberRecord& update,
                                      rocksdb::WriteBatch* batch) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(update.id());
  if (it == members_.end()) return errors::MemberNotFound();
  for (const auto& [id, other] : members_) {
    if (id == update.id()) continue;
    for (const auto& url : update.peer_urls()) {
      if (std::find(other.peer_urls().begin(), other.peer_urls().end(), url) !=
          other.peer_urls().end()) {
        return errors::PeerUrlExists();
      }
    }
  }
  *it->second.mutable_peer_urls() = update.peer_urls();
  Persist(it->second, batch);
  return absl::OkStatus();
}

std::vector<internalpb::MemberRecord> MemberTable::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<internalpb::MemberRecord> out;
  out.reserve(members_.size());
  for (const auto& [id, record] : members_) out.push_back(record);
  return out;
}

bool MemberTable::WasRemoved(uint64_t id) const {
  absl::ReaderMutexLock lock(&mu_);
  return removed_.contains(id);
}

bool MemberTable::IsLearner(uint64_t id) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = members_.find(id);
  return it != members_.end() && it->second.is_learner();
}

std::optional<internalpb::MemberRecord> MemberTable::Find(uint64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return std::nullopt;
  return it->second;
}

void MemberTable::Persist(const internalpb::MemberRecord& record, rocksdb::WriteBatch* batch) {
  batch->Put(MemberKey(record.id()), record.SerializeAsString());
}

}  // namespace leasehold::storage
