// etcd's --force-new-cluster: restarts a member from its data as the only member of its cluster,
// to recover the data of a cluster that lost its quorum for good. Like etcd, it
//   - discards the entries the log holds beyond its commit index (they were never committed, so
//     nobody was told they took effect);
//   - appends, already committed at the current term, one membership change removing each other
//     member (and promoting this one, should it be a learner), so that applying the log leaves a
//     single voter that elects itself at once.
// A member whose own removal is already committed in its log is refused (FailedPrecondition):
// applying that removal would stop it for good.
// The cluster keeps its id and its data; the members removed stay removed (if they are restarted,
// they are told so and stop, as etcd's are). Unsafe by nature: writes that a lost majority
// committed but this member never learned of are gone, which is why it must be asked for.
//
// Runs once at start, before the Raft node is made, on a member that has a log (a fresh data dir
// founds its cluster as usual and ignores the flag, as etcd does).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "storage/backend/engine.h"
#include "storage/backend/raft_log_store.h"

namespace leasehold::server {

// `self_id` is this member's id; `applied` is the state machine's applied index, the point the log
// store's stored membership describes. DataLoss for an unreadable membership change.
[[nodiscard]] absl::Status ForceNewCluster(uint64_t self_id, uint64_t applied,
                                           storage::Engine* engine, storage::RaftLogStore* log);

}  // namespace leasehold::server
