// AlarmTable: the cluster's raised alarms (etcd's alarm store) as replicated state, one record per
// (member, alarm type). Changed only by the state machine applying Alarm entries; read by the
// Maintenance service and by the state machine, which refuses writes while NOSPACE or CORRUPT is
// raised.
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "etcdserverpb/rpc.pb.h"
#include "rocksdb/write_batch.h"
#include "storage/backend/engine.h"

namespace leasehold::storage {

class AlarmTable {
 public:
  // Replaces the alarms with the persisted ones. DataLoss on a malformed record.
  [[nodiscard]] absl::Status Restore(const Engine& engine);

  // etcd's answers: Activate returns the alarm now raised (also when it already was); Deactivate
  // returns the alarm it cleared, or nothing when it was not raised. Type NONE is ignored.
  std::optional<etcdserverpb::AlarmMember> Activate(uint64_t member_id,
                                                    etcdserverpb::AlarmType type,
                                                    rocksdb::WriteBatch* batch);
  std::optional<etcdserverpb::AlarmMember> Deactivate(uint64_t member_id,
                                                      etcdserverpb::AlarmType type,
                                                      rocksdb::WriteBatch* batch);

  // Every raised alarm of `type` (NONE: of every type), by member id.
  std::vector<etcdserverpb::AlarmMember> List(etcdserverpb::AlarmType type) const;
  bool Raised(etcdserverpb::AlarmType type) const;

  // Whether `key` is one of this table's records (they belong to the cluster that raised them and
  // are left out of backups).
  static bool IsAlarmKey(std::string_view key);

 private:
  mutable absl::Mutex mu_;
  std::set<std::pair<int, uint64_t>> alarms_ ABSL_GUARDED_BY(mu_);  // (type, member id)
};

}  // namespace leasehold::storage
