// The lease a Lock or Campaign call waits under, as etcd's server-side sessions treat it: a given
// lease is kept alive for as long as the call waits; lease 0 means "grant one of 60 s". Either way the
// lease is left running (orphaned), not revoked, when the call returns.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "client/leasehold/managed_lease.h"

namespace leasehold::server {

// Starts keeping `lease_id` (or a new 60 s lease when 0) alive. NotFound when the lease does not exist.
absl::StatusOr<std::unique_ptr<ManagedLease>> KeepSessionLease(Client* client, int64_t lease_id);

}  // namespace leasehold::server
