// etcd's --force-new-cluster: restarts a member from its data as the only member of its cluster,
// to recover the data of a cluster that lost its quorum for good. Like etcd, it
//   - discards the entries the log holds beyond its commit index (they were never committed, so
//     nobody was told they took effect);
//   - appends, already committed at the current term, one membership change removing each other
//     member (and adding this one, should it be missing, or promoting it from learner), so that
//     applying the log leaves a single voter that elects itself at once.
// The cluster keeps its id and its data; the members removed stay removed (if they are restarted,
// they are told so and stop, as etcd's are). Unsafe by nature: writes that a lost majority
// committed but this member never learned of are gone, which is why it must be asked for.
//
// Runs once at start, before the Raft node is made, on a member that has a log (a fresh data dir
// founds its cluster as usual and ignores the flag, as etcd does).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "leasehold/internal.pb.h"
#include "storage/engine.h"
#include "storage/raft_log_store.h"

namespace leasehold::server {

// `self` is this member's record (id, name, peer and client URLs); `applied` is the state
// machine's applied index, the point the log store's stored membership describes.
absl::Status ForceNewCluster(const internalpb::MemberRecord& self, uint64_t applied, storage::Engine* engine,
                             storage::RaftLogStore* log);

}  // namespace leasehold::server
