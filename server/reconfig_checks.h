// Membership changes a cluster can take without losing its quorum: etcd's strict reconfiguration
// checks (on by default in etcd 3.4), decided from the replicated member table.
//
// A member counts as started once it has published its name (see MemberTable), as in etcd. The
// checks keep a majority of the voters started after the change, so an operator cannot remove the
// last member or add a voter the cluster cannot yet count on; at most one learner at a time.
// Whether a learner's log has caught up is the leader's to say (NodeLoop), not the table's.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "leasehold/internal.pb.h"

namespace leasehold::server {

using MemberRecords = std::vector<internalpb::MemberRecord>;

// MemberAdd: a voter only while the started voters stay a majority with the new one counted as not
// started; a learner only while there is none.
absl::Status MayAddMember(const MemberRecords& members, bool learner);
// MemberRemove: a voter only while the started voters left are a majority of the voters left;
// learners are always removable. `id` must be a member.
absl::Status MayRemoveMember(const MemberRecords& members, uint64_t id);
// MemberPromote of learner `id`, counted as started: the voters, with it, must keep a started
// majority. A learner that never started cannot be in sync with the leader.
absl::Status MayPromoteMember(const MemberRecords& members, uint64_t id);

// etcd's connectivity checks, made by the leader from the voters it has heard from lately
// (Raft's leader lease freshness: within the last election timeout), itself included. etcd
// judges from its transport's streams, which every member keeps to every other.
struct VoterHealth {
  int voters = 0;
  int active = 0;
};
// MemberAdd of a voter: every voter must be active ("etcdserver: unhealthy cluster" otherwise), so
// the quorum does not come to rest on the new, not yet running voter.
absl::Status HealthAllowsAddingVoter(VoterHealth health);
// MemberRemove of an active voter: the active voters left must be a majority of the voters left.
// (A voter not heard from lately may always go: it is not part of the working quorum.)
absl::Status HealthAllowsRemovingActiveVoter(VoterHealth health);

}  // namespace leasehold::server
