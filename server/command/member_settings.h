// The member's settings from etcd's flags: the node loop's options, the member's configuration and
// the expiry loop's, each with etcd's derived values (request timeout, election ticks, quota).
#pragma once

#include <cstdint>

#include "leasehold/internal.pb.h"
#include "server/command/cluster_config.h"
#include "server/command/flags.h"
#include "server/member/expiry_loop.h"
#include "server/member/member.h"
#include "server/member/node_loop.h"

namespace leasehold::server {

// etcd's request timeout: 5 s plus two election timeouts.
int64_t RequestTimeoutMs(const Flags& flags);

// The node loop of member `identity` in `cluster` (founding it when --initial-cluster-state is
// new). Its callbacks log as etcd does, and stop the process when the member is removed.
NodeLoop::Options NodeLoopOptionsFrom(const Flags& flags,
                                      const internalpb::MemberIdentity& identity,
                                      const ClusterConfig& cluster);

// The member's configuration (its JWT signer is left for the caller, which owns it).
MemberConfig MemberConfigFrom(const Flags& flags, const internalpb::MemberIdentity& identity);

ExpiryLoop::Options ExpiryLoopOptionsFrom(const Flags& flags);

}  // namespace leasehold::server
