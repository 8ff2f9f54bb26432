#include "common/etcd_errors.h"

namespace leasehold::errors {

absl::Status EmptyKey() { return absl::InvalidArgumentError("etcdserver: key is not provided"); }
absl::Status KeyNotFound() { return absl::InvalidArgumentError("etcdserver: key not found"); }
absl::Status ValueProvided() { return absl::InvalidArgumentError("etcdserver: value is provided"); }
absl::Status LeaseProvided() { return absl::InvalidArgumentError("etcdserver: lease is provided"); }
absl::Status TooManyOps() {
  return absl::InvalidArgumentError("etcdserver: too many operations in txn request");
}
absl::Status DuplicateKey() {
  return absl::InvalidArgumentError("etcdserver: duplicate key given in txn request");
}
absl::Status RequestTooLarge() {
  return absl::InvalidArgumentError("etcdserver: request is too large");
}
absl::Status TooManyRequests() { return absl::UnknownError("etcdserver: too many requests"); }
absl::Status Compacted() {
  return absl::OutOfRangeError("etcdserver: mvcc: required revision has been compacted");
}
absl::Status FutureRevision() {
  return absl::OutOfRangeError("etcdserver: mvcc: required revision is a future revision");
}
absl::Status LeaseNotFound() {
  return absl::NotFoundError("etcdserver: requested lease not found");
}
absl::Status LeaseExists() {
  return absl::FailedPreconditionError("etcdserver: lease already exists");
}
absl::Status LeaseTtlTooLarge() { return absl::OutOfRangeError("etcdserver: too large lease TTL"); }
absl::Status NoLeader() { return absl::UnavailableError("etcdserver: no leader"); }
absl::Status LeaderChanged() { return absl::UnavailableError("etcdserver: leader changed"); }
absl::Status RequestTimeout() { return absl::UnavailableError("etcdserver: request timed out"); }
absl::Status Stopped() { return absl::UnavailableError("etcdserver: server stopped"); }
// etcd 3.4 sends this one, and the two below, with code Unknown (its map of server errors to codes
// lacks them, or holds a client-side error there). The code matters more than the text: etcd's Go
// client re-sends any call, a write included, answered Cancelled or DeadlineExceeded before its own
// deadline, and retries no write answered Unknown (docs/client-retries.md).
absl::Status RequestCancelled() { return absl::UnknownError("etcdserver: request cancelled"); }
absl::Status NotCapable() { return absl::UnavailableError("etcdserver: not capable"); }
absl::Status NotSupportedForLearner() {
  return absl::UnavailableError("etcdserver: rpc not supported for learner");
}
absl::Status MemberNotFound() { return absl::NotFoundError("etcdserver: member not found"); }
absl::Status PeerUrlExists() {
  return absl::FailedPreconditionError("etcdserver: Peer URLs already exists");
}
absl::Status MemberBadUrls() {
  return absl::InvalidArgumentError("etcdserver: given member URLs are invalid");
}
absl::Status MemberNotLearner() {
  return absl::FailedPreconditionError("etcdserver: can only promote a learner member");
}
absl::Status Unhealthy() { return absl::UnavailableError("etcdserver: unhealthy cluster"); }
absl::Status NotEnoughStartedMembers() {
  // etcd 3.4 sends this one with code Unknown: it is missing from its map of server errors to
  // codes.
  return absl::UnknownError(
      "etcdserver: re-configuration failed due to not enough started members");
}
absl::Status TooManyLearners() {
  return absl::FailedPreconditionError("etcdserver: too many learner members in cluster");
}
absl::Status LearnerNotReady() {
  return absl::FailedPreconditionError(
      "etcdserver: can only promote a learner member which is in sync with leader");
}

absl::Status NotLeader() { return absl::FailedPreconditionError("etcdserver: not leader"); }
absl::Status BadLeaderTransferee() {
  return absl::FailedPreconditionError("etcdserver: bad leader transferee");
}
absl::Status WrongDowngradeVersionFormat() {
  return absl::InvalidArgumentError("etcdserver: wrong downgrade target version format");
}
absl::Status InvalidDowngradeTargetVersion() {
  return absl::InvalidArgumentError("etcdserver: invalid downgrade target version");
}
absl::Status NoInflightDowngrade() {
  return absl::FailedPreconditionError("etcdserver: no inflight downgrade job");
}
absl::Status UnknownMethod() { return absl::UnknownError("etcdserver: unknown method"); }
absl::Status NoSpace() {
  return absl::ResourceExhaustedError("etcdserver: mvcc: database space exceeded");
}
absl::Status Corrupt() { return absl::DataLossError("etcdserver: corrupt cluster"); }

absl::Status LeaderTransferTimeout() {
  return absl::UnknownError("etcdserver: request timed out, leader transfer took too long");
}

absl::Status RootUserNotExist() {
  return absl::FailedPreconditionError("etcdserver: root user does not exist");
}
absl::Status RootRoleNotExist() {
  return absl::FailedPreconditionError("etcdserver: root user does not have root role");
}
absl::Status UserAlreadyExist() {
  return absl::FailedPreconditionError("etcdserver: user name already exists");
}
absl::Status UserEmpty() { return absl::InvalidArgumentError("etcdserver: user name is empty"); }
absl::Status UserNotFound() {
  return absl::FailedPreconditionError("etcdserver: user name not found");
}
absl::Status RoleAlreadyExist() {
  return absl::FailedPreconditionError("etcdserver: role name already exists");
}
absl::Status RoleNotFound() {
  return absl::FailedPreconditionError("etcdserver: role name not found");
}
absl::Status RoleEmpty() { return absl::InvalidArgumentError("etcdserver: role name is empty"); }
absl::Status AuthFailed() {
  return absl::InvalidArgumentError(
      "etcdserver: authentication failed, invalid user ID or password");
}
absl::Status PermissionNotGiven() {
  return absl::InvalidArgumentError("etcdserver: permission not given");
}
absl::Status PermissionDenied() {
  return absl::PermissionDeniedError("etcdserver: permission denied");
}
absl::Status RoleNotGranted() {
  return absl::FailedPreconditionError("etcdserver: role is not granted to the user");
}
absl::Status PermissionNotGranted() {
  return absl::FailedPreconditionError("etcdserver: permission is not granted to the role");
}
absl::Status AuthNotEnabled() {
  return absl::FailedPreconditionError("etcdserver: authentication is not enabled");
}
absl::Status InvalidAuthToken() {
  return absl::UnauthenticatedError("etcdserver: invalid auth token");
}
absl::Status AuthOldRevision() {
  return absl::InvalidArgumentError("etcdserver: revision of auth store is old");
}
absl::Status InvalidAuthMgmt() {
  return absl::InvalidArgumentError("etcdserver: invalid auth management");
}

}  // namespace leasehold::errors
