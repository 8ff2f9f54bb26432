// The one table of etcd's client-visible errors. absl::StatusCode values equal gRPC's codes, and
// etcd's clients recognise errors by message text, so each constructor carries etcd's exact text.
#pragma once

#include "absl/status/status.h"

namespace leasehold::errors {

absl::Status EmptyKey();            // InvalidArgument "etcdserver: key is not provided"
absl::Status KeyNotFound();         // InvalidArgument "etcdserver: key not found"
absl::Status ValueProvided();       // InvalidArgument "etcdserver: value is provided"
absl::Status LeaseProvided();       // InvalidArgument "etcdserver: lease is provided"
absl::Status TooManyOps();          // InvalidArgument "etcdserver: too many operations in txn request"
absl::Status DuplicateKey();        // InvalidArgument "etcdserver: duplicate key given in txn request"
absl::Status RequestTooLarge();     // InvalidArgument "etcdserver: request is too large"
absl::Status TooManyRequests();     // ResourceExhausted "etcdserver: too many requests"
absl::Status Compacted();           // OutOfRange "etcdserver: mvcc: required revision has been compacted"
absl::Status FutureRevision();      // OutOfRange "etcdserver: mvcc: required revision is a future revision"
absl::Status LeaseNotFound();       // NotFound "etcdserver: requested lease not found"
absl::Status LeaseExists();         // FailedPrecondition "etcdserver: lease already exists"
absl::Status LeaseTtlTooLarge();    // OutOfRange "etcdserver: too large lease TTL"
absl::Status NoLeader();            // Unavailable "etcdserver: no leader"
absl::Status RequestTimeout();      // Unavailable "etcdserver: request timed out"
absl::Status LeaderChanged();       // Unavailable "etcdserver: leader changed"
absl::Status Stopped();             // Unavailable "etcdserver: server stopped"
absl::Status NotCapable();          // Unavailable "etcdserver: not capable"
absl::Status NotSupportedForLearner();  // Unavailable "etcdserver: rpc not supported for learner"
absl::Status MemberNotFound();      // NotFound "etcdserver: member not found"
absl::Status PeerUrlExists();       // FailedPrecondition "etcdserver: Peer URLs already exists"
absl::Status MemberBadUrls();       // InvalidArgument "etcdserver: given member URLs are invalid"
absl::Status MemberNotLearner();    // FailedPrecondition "etcdserver: can only promote a learner member"
absl::Status Unhealthy();           // Unavailable "etcdserver: unhealthy cluster"
absl::Status NotEnoughStartedMembers();  // Unknown "etcdserver: re-configuration failed due to not enough started members"
absl::Status TooManyLearners();     // FailedPrecondition "etcdserver: too many learner members in cluster"
absl::Status LearnerNotReady();     // FailedPrecondition "etcdserver: can only promote a learner member which is in sync with leader"
absl::Status NotLeader();           // FailedPrecondition "etcdserver: not leader"
absl::Status BadLeaderTransferee(); // FailedPrecondition "etcdserver: bad leader transferee"
absl::Status NoSpace();             // ResourceExhausted "etcdserver: mvcc: database space exceeded"
absl::Status LeaderTransferTimeout();  // DeadlineExceeded "etcdserver: request timed out, leader transfer took too long"

// etcd's v3 auth.
absl::Status RootUserNotExist();    // FailedPrecondition "etcdserver: root user does not exist"
absl::Status RootRoleNotExist();    // FailedPrecondition "etcdserver: root user does not have root role"
absl::Status UserAlreadyExist();    // FailedPrecondition "etcdserver: user name already exists"
absl::Status UserEmpty();           // InvalidArgument "etcdserver: user name is empty"
absl::Status UserNotFound();        // FailedPrecondition "etcdserver: user name not found"
absl::Status RoleAlreadyExist();    // FailedPrecondition "etcdserver: role name already exists"
absl::Status RoleNotFound();        // FailedPrecondition "etcdserver: role name not found"
absl::Status RoleEmpty();           // InvalidArgument "etcdserver: role name is empty"
absl::Status AuthFailed();          // InvalidArgument "etcdserver: authentication failed, invalid user ID or password"
absl::Status PermissionNotGiven();  // InvalidArgument "etcdserver: permission not given"
absl::Status PermissionDenied();    // PermissionDenied "etcdserver: permission denied"
absl::Status RoleNotGranted();      // FailedPrecondition "etcdserver: role is not granted to the user"
absl::Status PermissionNotGranted();  // FailedPrecondition "etcdserver: permission is not granted to the role"
absl::Status AuthNotEnabled();      // FailedPrecondition "etcdserver: authentication is not enabled"
absl::Status InvalidAuthToken();    // Unauthenticated "etcdserver: invalid auth token"
absl::Status InvalidAuthMgmt();     // InvalidArgument "etcdserver: invalid auth management"

}  // namespace leasehold::errors
