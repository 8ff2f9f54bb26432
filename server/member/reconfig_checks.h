// Membership changes a cluster can take without losing its quorum: etcd's strict reconfiguration
// checks (on by default in etcd 3.4), decided by the leader from the replicated member table and
// from which voters it hears.
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

// The started-majority rules below apply only when `strict` (etcd's --strict-reconfig-check); the
// learner rules always do, as on etcd.
// MemberAdd: a voter only while the started voters stay a majority with the new one counted as not
// started; a learner only while there is none.
[[nodiscard]] absl::Status MayAddMember(const MemberRecords& members, bool learner, bool strict);
// MemberRemove: a voter only while the started voters left are a majority of the voters left (and,
// strict or not, never the last voter); learners are always removable. `id` must be a member.
[[nodiscard]] absl::Status MayRemoveMember(const MemberRecords& members, uint64_t id, bool strict);
// MemberPromote of learner `id`, counted as started: the voters, with it, must keep a started
// majority. A learner that never started cannot be in sync with the leader.
[[nodiscard]] absl::Status MayPromoteMember(const MemberRecords& members, uint64_t id, bool strict);

// etcd's connectivity checks, made by the leader from the voters that answered it within the last
// election timeout ("active"; the leader counts itself). etcd asks its transport instead, and also
// wants each connection up for 5 s, so a voter that has just restarted counts here at once.
struct VoterHealth {
  int voters = 0;
  int active = 0;
};
enum class MembershipChange { kAddVoter, kAddLearner, kRemoveVoter, kRemoveLearner, kPromote };
// Adding a voter or a learner: every voter must be active ("etcdserver: unhealthy cluster"
// otherwise). Removing an active voter: the active voters left must be a majority of the voters
// left. A silent voter (`target_active` false) or a learner may always go: neither is part of the
// working quorum. A promotion is not checked here (see NodeLoop::LearnerInSync).
[[nodiscard]] absl::Status HealthAllowsChange(MembershipChange change, bool target_active,
                                              VoterHealth health);

}  // namespace leasehold::server
