#include "server/watch_service.h"

#include "server/watch_stream.h"

namespace leasehold::server {

WatchService::WatchService(Member* member, WatchHub* hub, absl::Duration progress_interval)
    : member_(member), hub_(hub) {
  ticker_ = std::thread([this, progress_interval] {
    while (!stop_.WaitForNotificationWithTimeout(progress_interval)) hub_->NotifyProgress();
  });
}

WatchService::~WatchService() {
  stop_.Notify();
  ticker_.join();
}

grpc::ServerBidiReactor<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>* WatchService::Watch(
    grpc::CallbackServerContext* context) {
  return new WatchStream(member_, hub_);
}

}  // namespace leasehold::server
