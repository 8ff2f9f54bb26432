#include "server/session_lease.h"

namespace leasehold::server {

absl::StatusOr<std::unique_ptr<ManagedLease>> KeepSessionLease(Client* client, int64_t lease_id) {
  constexpr int64_t kDefaultSessionTtlSeconds = 60;  // etcd's session default
  return lease_id == 0 ? ManagedLease::Grant(client, kDefaultSessionTtlSeconds) : ManagedLease::Keep(client, lease_id);
}

}  // namespace leasehold::server
