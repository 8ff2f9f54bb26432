#include "server/api/session_lease.h"

#include "client/leasehold/client.h"

namespace leasehold::server {

absl::StatusOr<int64_t> SessionLease(Client* client, int64_t lease_id) {
  if (lease_id != 0) return lease_id;
  auto granted = client->LeaseGrant(kSessionTtlSeconds);
  if (!granted.ok()) return granted.status();
  return granted->id();
}

}  // namespace leasehold::server
