// etcdserverpb.Watch: one WatchStream per call, all fed by the member's WatchHub; a ticker thread
// sends progress notifications to idle watchers that asked for them (etcd's
// --experimental-watch-progress-notify-interval).
#pragma once

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/member.h"
#include "server/watch_hub.h"

namespace leasehold::server {

class WatchService final : public etcdserverpb::Watch::CallbackService {
 public:
  WatchService(Member* member, WatchHub* hub, absl::Duration progress_interval);
  ~WatchService();
  grpc::ServerBidiReactor<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>* Watch(
      grpc::CallbackServerContext* context) override;

 private:
  Member* member_;
  WatchHub* hub_;
  absl::Notification stop_;
  std::thread ticker_;
};

}  // namespace leasehold::server
