// The one table of etcd's client-visible errors. absl::StatusCode values equal gRPC's codes, and
// etcd's clients recognise errors by message text, so each constructor carries etcd's exact text.
#pragma once

#include "absl/status/status.h"

namespace leasehold::errors {

[[nodiscard]] absl::Status EmptyKey();       // InvalidArgument "etcdserver: key is not provided"
[[nodiscard]] absl::Status KeyNotFound();    // InvalidArgument "etcdserver: key not found"
[[nodiscard]] absl::Status ValueProvided();  // InvalidArgument "etcdserver: value is provided"
[[nodiscard]] absl::Status LeaseProvided();  // InvalidArgument "etcdserver: lease is provided"
[[nodiscard]] absl::Status
TooManyOps();  // InvalidArgument "etcdserver: too many operations in txn request"
[[nodiscard]] absl::Status
DuplicateKey();  // InvalidArgument "etcdserver: duplicate key given in txn request"
[[nodiscard]] absl::Status RequestTooLarge();  // InvalidArgument "etcdserver: request is too large"
[[nodiscard]] absl::Status TooManyRequests();  // Unknown "etcdserver: too many requests"
[[nodiscard]] absl::Status
Compacted();  // OutOfRange "etcdserver: mvcc: required revision has been compacted"
[[nodiscard]] absl::Status
FutureRevision();  // OutOfRange "etcdserver: mvcc: required revision is a future revision"
[[nodiscard]] absl::Status LeaseNotFound();  // NotFound "etcdserver: requested lease not found"
[[nodiscard]] absl::Status LeaseExists();  // FailedPrecondition "etcdserver: lease already exists"
[[nodiscard]] absl::Status LeaseTtlTooLarge();  // OutOfRange "etcdserver: too large lease TTL"
[[nodiscard]] absl::Status NoLeader();          // Unavailable "etcdserver: no leader"
[[nodiscard]] absl::Status RequestTimeout();    // Unavailable "etcdserver: request timed out"
[[nodiscard]] absl::Status LeaderChanged();     // Unavailable "etcdserver: leader changed"
[[nodiscard]] absl::Status Stopped();           // Unavailable "etcdserver: server stopped"
[[nodiscard]] absl::Status RequestCancelled();  // Unknown "etcdserver: request cancelled"
[[nodiscard]] absl::Status NotCapable();        // Unavailable "etcdserver: not capable"
[[nodiscard]] absl::Status
NotSupportedForLearner();  // Unavailable "etcdserver: rpc not supported for learner"
[[nodiscard]] absl::Status MemberNotFound();  // NotFound "etcdserver: member not found"
[[nodiscard]] absl::Status
PeerUrlExists();  // FailedPrecondition "etcdserver: Peer URLs already exists"
[[nodiscard]] absl::Status
MemberBadUrls();  // InvalidArgument "etcdserver: given member URLs are invalid"
[[nodiscard]] absl::Status
MemberNotLearner();  // FailedPrecondition "etcdserver: can only promote a learner member"
[[nodiscard]] absl::Status Unhealthy();  // Unavailable "etcdserver: unhealthy cluster"
[[nodiscard]] absl::Status NotEnoughStartedMembers();  // Unknown "etcdserver: re-configuration
                                                       // failed due to not enough started members"
[[nodiscard]] absl::Status
TooManyLearners();  // FailedPrecondition "etcdserver: too many learner members in cluster"
[[nodiscard]] absl::Status LearnerNotReady();  // FailedPrecondition "etcdserver: can only promote a
                                               // learner member which is in sync with leader"
[[nodiscard]] absl::Status NotLeader();        // FailedPrecondition "etcdserver: not leader"
[[nodiscard]] absl::Status
BadLeaderTransferee();  // FailedPrecondition "etcdserver: bad leader transferee"
// etcd 3.5's Maintenance.Downgrade refusals.
[[nodiscard]] absl::Status WrongDowngradeVersionFormat();  // InvalidArgument "etcdserver: wrong
                                                           // downgrade target version format"
[[nodiscard]] absl::Status
InvalidDowngradeTargetVersion();  // InvalidArgument "etcdserver: invalid downgrade target version"
[[nodiscard]] absl::Status
NoInflightDowngrade();  // FailedPrecondition "etcdserver: no inflight downgrade job"
[[nodiscard]] absl::Status UnknownMethod();  // Unknown "etcdserver: unknown method"
[[nodiscard]] absl::Status
NoSpace();  // ResourceExhausted "etcdserver: mvcc: database space exceeded"
[[nodiscard]] absl::Status Corrupt();  // DataLoss "etcdserver: corrupt cluster"
[[nodiscard]] absl::Status
LeaderTransferTimeout();  // Unknown "etcdserver: request timed out, leader transfer took too long"

// etcd's v3 auth.
[[nodiscard]] absl::Status
RootUserNotExist();  // FailedPrecondition "etcdserver: root user does not exist"
[[nodiscard]] absl::Status
RootRoleNotExist();  // FailedPrecondition "etcdserver: root user does not have root role"
[[nodiscard]] absl::Status
UserAlreadyExist();  // FailedPrecondition "etcdserver: user name already exists"
[[nodiscard]] absl::Status UserEmpty();     // InvalidArgument "etcdserver: user name is empty"
[[nodiscard]] absl::Status UserNotFound();  // FailedPrecondition "etcdserver: user name not found"
[[nodiscard]] absl::Status
RoleAlreadyExist();  // FailedPrecondition "etcdserver: role name already exists"
[[nodiscard]] absl::Status RoleNotFound();  // FailedPrecondition "etcdserver: role name not found"
[[nodiscard]] absl::Status RoleEmpty();     // InvalidArgument "etcdserver: role name is empty"
[[nodiscard]] absl::Status
AuthFailed();  // InvalidArgument "etcdserver: authentication failed, invalid user ID or password"
[[nodiscard]] absl::Status
PermissionNotGiven();  // InvalidArgument "etcdserver: permission not given"
[[nodiscard]] absl::Status PermissionDenied();  // PermissionDenied "etcdserver: permission denied"
[[nodiscard]] absl::Status
RoleNotGranted();  // FailedPrecondition "etcdserver: role is not granted to the user"
[[nodiscard]] absl::Status
PermissionNotGranted();  // FailedPrecondition "etcdserver: permission is not granted to the role"
[[nodiscard]] absl::Status
AuthNotEnabled();  // FailedPrecondition "etcdserver: authentication is not enabled"
[[nodiscard]] absl::Status InvalidAuthToken();  // Unauthenticated "etcdserver: invalid auth token"
[[nodiscard]] absl::Status
AuthOldRevision();  // InvalidArgument "etcdserver: revision of auth store is old"
[[nodiscard]] absl::Status
InvalidAuthMgmt();  // InvalidArgument "etcdserver: invalid auth management"

}  // namespace leasehold::errors
