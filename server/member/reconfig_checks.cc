#include "server/member/reconfig_checks.h"

#include "common/etcd_errors.h"

namespace leasehold::server {
namespace {

bool Started(const internalpb::MemberRecord& m) { return !m.name().empty(); }

// Voters and started voters, leaving out `skip` (0: none).
struct VoterCount {
  int members = 0;
  int started = 0;
};
VoterCount CountVoters(const MemberRecords& members, uint64_t skip) {
  VoterCount c;
  for (const auto& m : members) {
    if (m.is_learner() || m.id() == skip) continue;
    ++c.members;
    if (Started(m)) ++c.started;
  }
  return c;
}

bool StartedMajority(VoterCount c) { return c.started >= c.members / 2 + 1; }

}  // namespace

absl::Status MayAddMember(const MemberRecords& members, bool learner, bool strict) {
  if (learner) {
    for (const auto& m : members) {
      if (m.is_learner()) return errors::TooManyLearners();
    }
    return absl::OkStatus();
  }
  if (!strict) return absl::OkStatus();
  VoterCount c = CountVoters(members, 0);
  ++c.members;  // the new voter, not started yet
  // A second member for a lone one (as when a cluster is rebuilt from a backup) is let through, as
  // etcd lets it: the pair has no quorum until the new member starts.
  if (c.members == 2 && c.started == 1) return absl::OkStatus();
  return StartedMajority(c) ? absl::OkStatus() : errors::NotEnoughStartedMembers();
}

absl::Status MayRemoveMember(const MemberRecords& members, uint64_t id, bool strict) {
  for (const auto& m : members) {
    if (m.id() == id && m.is_learner()) return absl::OkStatus();
  }
  const VoterCount left = CountVoters(members, id);
  // Never the last voter, strict or not: a cluster without one can do nothing again.
  if (left.members == 0) return errors::NotEnoughStartedMembers();
  if (!strict) return absl::OkStatus();
  return StartedMajority(left) ? absl::OkStatus() : errors::NotEnoughStartedMembers();
}

absl::Status MayPromoteMember(const MemberRecords& members, uint64_t id, bool strict) {
  for (const auto& m : members) {
    if (m.id() == id && !Started(m)) return errors::LearnerNotReady();
  }
  if (!strict) return absl::OkStatus();
  VoterCount c = CountVoters(members, id);
  ++c.members;  // the learner, started
  ++c.started;
  return StartedMajority(c) ? absl::OkStatus() : errors::NotEnoughStartedMembers();
}

absl::Status HealthAllowsChange(MembershipChange change, bool target_active, VoterHealth health) {
  switch (change) {
    case MembershipChange::kAddVoter:
    case MembershipChange::kAddLearner:
      return health.active == health.voters ? absl::OkStatus() : errors::Unhealthy();
    case MembershipChange::kRemoveVoter: {
      if (!target_active) return absl::OkStatus();
      const int voters_left = health.voters - 1;
      return health.active - 1 >= voters_left / 2 + 1 ? absl::OkStatus() : errors::Unhealthy();
    }
    case MembershipChange::kRemoveLearner:
    case MembershipChange::kPromote:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace leasehold::server
