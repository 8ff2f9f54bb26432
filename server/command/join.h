// Joining an existing cluster (--initial-cluster-state existing): the new member, added beforehand
// with `etcdctl member add`, asks the members named in --initial-cluster for the member list (on
// their peer ports) and takes its id and the cluster's id from the entry with its peer URLs.
#pragma once

#include "absl/status/statusor.h"
#include "server/command/cluster_config.h"
#include "server/command/flags.h"

namespace leasehold::server {

// `config` as built from the flags; returns it with self_id, cluster_id and peer_urls taken from
// the running cluster. FailedPrecondition when the cluster does not list this member's peer URLs;
// Unavailable when no member answers within `timeout_ms`.
[[nodiscard]] absl::StatusOr<ClusterConfig> DiscoverExistingCluster(const Flags& flags,
                                                                    ClusterConfig config,
                                                                    int64_t timeout_ms);

}  // namespace leasehold::server
