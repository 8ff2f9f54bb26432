// The lease a Lock or Campaign call runs under, as etcd's server-side sessions treat it: a given
// lease is used as it is (the caller keeps it alive; the server does not renew it — a paused caller
// loses its locks after the TTL, as with etcd); lease 0 means "grant one of 60 s", left to run out.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace leasehold {
class Client;
}

namespace leasehold::server {

// The TTL of the lease granted for a call with lease 0 (etcd's session default).
inline constexpr int64_t kSessionTtlSeconds = 60;

// `lease_id`, or a new 60 s lease's id when it is 0.
[[nodiscard]] absl::StatusOr<int64_t> SessionLease(Client* client, int64_t lease_id);

}  // namespace leasehold::server
