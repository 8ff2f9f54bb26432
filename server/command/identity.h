// A member's cluster and member ids: taken from the cluster configuration when the data dir is
// created, then read back (a restarted member keeps its ids whatever the flags say, as etcd does).
#pragma once

#include "absl/status/statusor.h"
#include "leasehold/internal.pb.h"
#include "server/command/cluster_config.h"
#include "storage/backend/engine.h"

namespace leasehold::server {

[[nodiscard]] absl::StatusOr<internalpb::MemberIdentity> LoadOrCreateIdentity(
    storage::Engine* engine, const std::string& name, const ClusterConfig& cluster);

}  // namespace leasehold::server
