#include "server/watch_service.h"

#include "server/caller.h"

#include "server/watch_stream.h"

namespace leasehold::server {

WatchService::WatchService(Member* member, WatchHub* hub, absl::Duration progress_interval,
                           absl::Duration election_timeout)
    : member_(member), hub_(hub) {
  ticker_ = std::thread([this, progress_interval] {
    while (!stop_.WaitForNotificationWithTimeout(progress_interval)) hub_->NotifyProgress();
  });
  leader_monitor_ = std::thread([this, election_timeout] {
    constexpr int kLooksWithoutLeader = 3;  // etcd's maxNoLeaderCnt
    int without = 0;
    while (!stop_.WaitForNotificationWithTimeout(election_timeout)) {
      without = member_->proposer().leader_id() == 0 ? without + 1 : 0;
      if (without >= kLooksWithoutLeader) hub_->NotifyNoLeader();
    }
  });
}

WatchService::~WatchService() {
  stop_.Notify();
  ticker_.join();
  leader_monitor_.join();
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* WatchService::Watch(grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("hasleader");
  const bool require_leader = it != metadata.end() && it->second == "true";
  return new WatchStream(member_, hub_, require_leader, AuthTokenOf(*context));
}

}  // namespace leasehold::server
