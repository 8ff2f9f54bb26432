// etcdserverpb.Watch: one WatchStream per call, all fed by the member's WatchHub.
#pragma once

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/member.h"
#include "server/watch_hub.h"

namespace leasehold::server {

class WatchService final : public etcdserverpb::Watch::CallbackService {
 public:
  WatchService(Member* member, WatchHub* hub) : member_(member), hub_(hub) {}
  grpc::ServerBidiReactor<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>* Watch(
      grpc::CallbackServerContext* context) override;

 private:
  Member* member_;
  WatchHub* hub_;
};

}  // namespace leasehold::server
