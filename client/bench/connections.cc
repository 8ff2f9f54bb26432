#include "client/bench/connections.h"

#include <chrono>

namespace leasehold::bench {

Connections::Connections(const Options& options) {
  for (int i = 0; i < options.conns; ++i) {
    grpc::ChannelArguments args;
    // A private subchannel pool gives every channel its own TCP connection.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(-1);
    const std::string& endpoint = options.endpoints[i % options.endpoints.size()];
    auto channel = grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
    kv_.push_back(etcdserverpb::KV::NewStub(channel));
    lease_.push_back(etcdserverpb::Lease::NewStub(channel));
    watch_.push_back(etcdserverpb::Watch::NewStub(channel));
    channels_.push_back(std::move(channel));
  }
}

bool Connections::WaitReady(double seconds) {
  auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  for (auto& channel : channels_) {
    if (!channel->WaitForConnected(deadline)) return false;
  }
  return true;
}

}  // namespace leasehold::bench
