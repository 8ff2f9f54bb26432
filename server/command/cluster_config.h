// The founding membership from etcd's bootstrap flags (--initial-cluster, --initial-cluster-token,
// --initial-advertise-peer-urls), and the member and cluster ids derived from it. A member id is a
// pure function of its peer URLs and the token, and the cluster id of the token, so every member
// computes the same ones without talking to the others.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "leasehold/internal.pb.h"
#include "server/command/flags.h"

namespace leasehold::server {

struct ClusterConfig {
  uint64_t cluster_id = 0;
  uint64_t self_id = 0;
  // Every member named in --initial-cluster, in id order (client URLs empty: members publish them).
  std::vector<internalpb::MemberRecord> members;
  // member id -> first peer URL, for reaching peers before the membership is applied.
  std::map<uint64_t, std::string> peer_urls;
};

// InvalidArgument when --initial-cluster is malformed, names a member twice, or does not list this
// member (--name) with exactly its --initial-advertise-peer-urls.
[[nodiscard]] absl::StatusOr<ClusterConfig> BuildClusterConfig(const Flags& flags);

// A founding member's id, as etcd derives it, so the same flags give the same ids on either server:
// the first 8 bytes (big-endian) of the SHA-1 of its sorted peer URLs and the cluster token, joined
// without separators.
uint64_t MemberIdOf(std::vector<std::string> peer_urls, const std::string& token);
// A new cluster's id, as etcd derives it: the first 8 bytes of the SHA-1 of its founding members'
// ids, sorted, 8 big-endian bytes each.
uint64_t ClusterIdOf(std::vector<uint64_t> member_ids);

}  // namespace leasehold::server
