// RouteKeepAlive: takes one keep-alive to the member that can answer it, waiting out a failover.
//
// The leader renews (Member::RenewLease); any other member forwards to the leader it knows. While
// no member can answer (no leader is known yet, the leader is not yet sure of its leadership or has
// not yet taken over the leases, the forward reached a member that is gone or no longer leads),
// the request is tried again every 50 ms until `give_up_at`, as etcd's LeaseRenew waits for a
// leader. A keep-alive that arrives during an election is therefore answered as soon as the new
// leader can renew, instead of being dropped and leaving the lease to the client's next attempt,
// which may come too late for a lease with little time left. After `give_up_at`, or once `wanted`
// returns false (asked before every retry, e.g. the stream has ended), `done` gets the last error.
//
// `done` runs exactly once, possibly inline, possibly later on one of gRPC's threads.
#pragma once

#include <functional>

#include "absl/time/time.h"
#include "etcdserverpb/rpc.pb.h"
#include "server/member.h"

namespace leasehold::server {

void RouteKeepAlive(Member* member, const etcdserverpb::LeaseKeepAliveRequest& request, absl::Time give_up_at,
                    std::function<bool()> wanted, Member::RenewDone done);

}  // namespace leasehold::server
