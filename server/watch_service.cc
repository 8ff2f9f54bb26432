#include "server/watch_service.h"

#include "server/watch_stream.h"

namespace leasehold::server {

grpc::ServerBidiReactor<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>* WatchService::Watch(
    grpc::CallbackServerContext* context) {
  return new WatchStream(member_, hub_);
}

}  // namespace leasehold::server
