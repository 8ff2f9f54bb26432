#include "server/command/join.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_join.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/peer/peer_dialer.h"

namespace leasehold::server {

absl::StatusOr<ClusterConfig> DiscoverExistingCluster(const Flags& flags, ClusterConfig config,
                                                      int64_t timeout_ms) {
  std::vector<std::string> mine = flags.initial_advertise_peer_urls;
  std::sort(mine.begin(), mine.end());
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    for (const auto& [id, url] : config.peer_urls) {
      if (id == config.self_id) continue;
      // BuildClusterConfig has checked every URL: an error here is an unreadable certificate file.
      auto channel = DialPeer(url, flags.peer_tls);
      if (!channel.ok()) return channel.status();
      auto peer_cluster = etcdserverpb::Cluster::NewStub(*channel);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
      etcdserverpb::MemberListResponse response;
      if (!peer_cluster->MemberList(&context, etcdserverpb::MemberListRequest(), &response).ok())
        continue;
      ClusterConfig found = config;
      found.cluster_id = response.header().cluster_id();
      found.self_id = 0;
      found.peer_urls.clear();
      for (const auto& member : response.members()) {
        std::vector<std::string> urls(member.peerurls().begin(), member.peerurls().end());
        if (!urls.empty()) found.peer_urls[member.id()] = urls.front();
        std::sort(urls.begin(), urls.end());
        if (urls == mine) found.self_id = member.id();
      }
      if (found.self_id == 0) {
        return absl::FailedPreconditionError("the cluster has no member with peer URLs " +
                                             absl::StrJoin(mine, ",") +
                                             ": add it first with 'etcdctl member add'");
      }
      return found;
    }
    if (std::chrono::steady_clock::now() >= give_up) {
      return absl::UnavailableError("no member of --initial-cluster answered on its peer URL");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace leasehold::server
