// etcd's v3 backend (a bbolt database: `etcdctl snapshot save` files, and the member/snap/db that
// etcd and `etcdctl snapshot restore` write) read as Leasehold's replicated records, so that an
// operator moving from etcd brings the keys, leases, users and roles over.
//
// What is read: bucket "key" (every version, in etcd's revision encoding) into Leasehold's versions
// with their create/mod revisions, versions and leases as they are; "meta"'s finishedCompactRev
// into the compacted revision; the current revision is the newest version's (or the compacted
// revision, if later); "lease" into leases with their TTLs and, where etcd checkpointed one, their
// remaining TTLs; "auth", "authUsers" and "authRoles" into the auth state (etcd's password hashes
// are bcrypt, as Leasehold's). Left out, as a restore founds a new cluster: "members",
// "members_removed", "cluster", "alarm" and the consistent index.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace leasehold::storage {

// Whether the bbolt database `file` is an etcd v3 backend (it has etcd's "key" and "meta"
// buckets).
bool IsEtcdBackend(std::string_view file);

// Calls `record` with each Leasehold record the etcd backend `file` (read from `path`, named in
// errors) amounts to. DataLoss on a malformed database or record; FailedPrecondition for a storage
// version this reader does not know (etcd newer than 3.6). Calls nothing before the version check.
[[nodiscard]] absl::Status ForEachRecordOfEtcdBackend(
    std::string_view file, const std::string& path,
    const std::function<absl::Status(std::string_view key, std::string_view value)>& record);

}  // namespace leasehold::storage
