#include "server/lease_forwarder.h"

#include "leasehold/peer.grpc.pb.h"
#include "storage/etcd_errors.h"

namespace leasehold::server {
namespace {

// One forwarded unary call: owns what gRPC needs until the callback.
template <typename Request, typename Response>
struct Call {
  grpc::ClientContext context;
  Request request;
  Response response;
  std::unique_ptr<peerpb::RaftPeer::Stub> stub;
  std::function<void(absl::StatusOr<Response>)> done;
};

template <typename Request, typename Response, typename Start>
void Forward(const LeaseForwarder::ChannelSource& channels, int64_t timeout_ms, uint64_t leader,
             const Request& request, std::function<void(absl::StatusOr<Response>)> done, Start start) {
  std::shared_ptr<grpc::Channel> channel = leader == 0 ? nullptr : channels(leader);
  if (channel == nullptr) {
    done(errors::NoLeader());
    return;
  }
  auto* call = new Call<Request, Response>;
  call->request = request;
  call->done = std::move(done);
  call->stub = peerpb::RaftPeer::NewStub(channel);
  call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  start(call->stub.get(), &call->context, &call->request, &call->response, [call](grpc::Status status) {
    if (status.ok()) {
      call->done(std::move(call->response));
    } else if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      call->done(absl::NotFoundError(status.error_message()));
    } else {
      // The member is unreachable or no longer leads: to the client, there is no leader right now.
      call->done(errors::NoLeader());
    }
    delete call;
  });
}

}  // namespace

void LeaseForwarder::Renew(uint64_t leader, const etcdserverpb::LeaseKeepAliveRequest& request,
                           std::function<void(absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse>)> done) {
  Forward(channels_, timeout_ms_, leader, request, std::move(done),
          [](peerpb::RaftPeer::Stub* stub, grpc::ClientContext* context, const auto* req, auto* resp, auto cb) {
            stub->async()->LeaseRenew(context, req, resp, std::move(cb));
          });
}

void LeaseForwarder::TimeToLive(uint64_t leader, const etcdserverpb::LeaseTimeToLiveRequest& request,
                                std::function<void(absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse>)> done) {
  Forward(channels_, timeout_ms_, leader, request, std::move(done),
          [](peerpb::RaftPeer::Stub* stub, grpc::ClientContext* context, const auto* req, auto* resp, auto cb) {
            stub->async()->LeaseTimeToLive(context, req, resp, std::move(cb));
          });
}

}  // namespace leasehold::server
