// MemberTable: the cluster's members as replicated state (etcd's membership store). Changed only by
// the state machine applying membership changes and publish entries; read by the Cluster service
// and the peer transport (to find a member's peer URLs).
//
// Thread-safe: one internal mutex; no method calls out while holding it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "leasehold/internal.pb.h"
#include "raft/raft.pb.h"
#include "rocksdb/write_batch.h"
#include "storage/backend/engine.h"

namespace leasehold::storage {

class MemberTable {
 public:
  // Whether `key` holds membership (members and removed ids): a restored backup founds a new
  // cluster with new ids, so backups leave these out.
  static bool IsMembershipKey(std::string_view key);

  // Replaces the members with the persisted ones. DataLoss on a malformed record.
  [[nodiscard]] absl::Status Restore(const Engine& engine);

  // Applies a committed membership change. Adding a member that is already present keeps its
  // published client URLs (the bootstrap entries are applied by every founding member). Writes the
  // changed record into `batch`.
  void ApplyConfChange(const raftpb::ConfChange& change, rocksdb::WriteBatch* batch);
  // Records a member's own announcement of its name and client URLs; unknown members are ignored
  // (a member removed while its publish was in flight).
  void ApplyPublish(const internalpb::MemberRecord& record, rocksdb::WriteBatch* batch);
  // etcd's MemberUpdate: member `update.id()` gets `update.peer_urls()`. etcd's "member not found"
  // when it is gone, "Peer URLs already exists" when another member has one of the URLs (checked
  // here, at apply, since members may change between the call and its entry); the table is then
  // unchanged.
  [[nodiscard]] absl::Status ApplyUpdate(const internalpb::MemberRecord& update,
                                         rocksdb::WriteBatch* batch);

  std::vector<internalpb::MemberRecord> List() const;  // ordered by id
  // Whether member `id` was removed from the cluster (etcd's removed set: ids are never reused, and
  // a removed member must not come back on its old data).
  bool WasRemoved(uint64_t id) const;
  std::optional<internalpb::MemberRecord> Find(uint64_t id) const;
  // Whether member `id` is in the table as a learner (no copy: asked on every client call).
  bool IsLearner(uint64_t id) const;

 private:
  void Persist(const internalpb::MemberRecord& record, rocksdb::WriteBatch* batch);

  mutable absl::Mutex mu_;
  std::map<uint64_t, internalpb::MemberRecord> members_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> removed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasehold::storage
