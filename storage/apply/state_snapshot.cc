// StateMachine's snapshot half: dumping the replicated records for a lagging member, and replacing
// this member's state with a received dump.
#include <iostream>

#include "common/status_macros.h"
#include "storage/apply/state_machine.h"

namespace leasehold::storage {

absl::Status StateMachine::Dump(std::string* out) const {
  absl::ReaderMutexLock lock(&mu_);
  if (unflushed_.Count() != 0) return absl::FailedPreconditionError("snapshot of unflushed state");
  internalpb::StateSnapshot snapshot;
  const std::string applied_key = keys::Meta("ci");
  auto it = engine_->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    if (keys::IsMemberLocal(key) || key == applied_key) continue;
    auto* record = snapshot.add_records();
    record->set_key(std::string(key));
    record->set_value(it->value().data(), it->value().size());
  }
  if (!it->status().ok()) return absl::DataLossError(it->status().ToString());
  // The applied index is recorded exactly (an empty entry's apply does not write it).
  auto* applied = snapshot.add_records();
  applied->set_key(applied_key);
  std::string value;
  AppendBigEndian64(&value, applied_index_);
  applied->set_value(value);
  if (!snapshot.SerializeToString(out))
    return absl::InternalError("snapshot too large to serialise");
  return absl::OkStatus();
}

absl::Status StateMachine::PrepareInstall(const std::string& data, uint64_t index,
                                          rocksdb::WriteBatch* batch) const {
  internalpb::StateSnapshot snapshot;
  if (!snapshot.ParseFromString(data))
    return absl::InvalidArgumentError("unreadable state snapshot");
  // Everything replicated goes; what is local stays.
  auto it = engine_->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    if (!keys::IsMemberLocal(key)) batch->Delete(it->key());
  }
  if (!it->status().ok()) return absl::DataLossError(it->status().ToString());
  for (const auto& record : snapshot.records()) {
    if (!keys::IsMemberLocal(record.key())) batch->Put(record.key(), record.value());
  }
  Engine::PutMetaU64(batch, "ci", index);
  return absl::OkStatus();
}

absl::Status StateMachine::ReloadFromEngine() {
  absl::MutexLock lock(&mu_);
  unflushed_.Clear();
  store_.ClearUnflushed();
  leases_.Clear();
  RETURN_IF_ERROR(RestoreLeases());
  RETURN_IF_ERROR(store_.Restore([&](const std::string& key, const KeyRecord& record) {
    if (record.lease != 0) leases_.Attach(record.lease, key);
  }));
  RETURN_IF_ERROR(members_.Restore(*engine_));
  RETURN_IF_ERROR(alarms_.Restore(*engine_));
  RETURN_IF_ERROR(auth_.Restore(*engine_));
  RETURN_IF_ERROR(blobs_.Restore(*engine_));
  ASSIGN_OR_RETURN(applied_index_, engine_->GetMetaU64("ci"));
  return absl::OkStatus();
}

}  // namespace leasehold::storage
