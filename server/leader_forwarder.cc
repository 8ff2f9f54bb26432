#include "server/leader_forwarder.h"

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

// The lease calls' errors: "not found" is the leader's answer; anything else means the member is
// unreachable or no longer leads, which to the client is "no leader" right now.
absl::Status LeaseCallError(const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return absl::NotFoundError(status.error_message());
  return errors::NoLeader();
}

// A promotion's errors: the leader's refusals keep their code and message; the transport's own
// (unreachable, timed out, cancelled) and "no leader" are "no leader".
absl::Status PromoteError(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      return errors::NoLeader();
    default:
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
}

template <typename Request, typename Response, typename Start>
void Forward(const LeaderForwarder::ChannelSource& channels, int64_t timeout_ms, uint64_t leader,
             const Request& request, std::function<void(absl::StatusOr<Response>)> done,
             absl::Status (*error_of)(const grpc::Status&), Start start) {
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
  start(call->stub.get(), &call->context, &call->request, &call->response, [call, error_of](grpc::Status status) {
    if (status.ok()) {
      call->done(std::move(call->response));
    } else {
      call->done(error_of(status));
    }
    delete call;
  });
}

}  // namespace

void LeaderForwarder::Renew(uint64_t leader, const etcdserverpb::LeaseKeepAliveRequest& request,
                           std::function<void(absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse>)> done) {
  Forward(channels_, timeout_ms_, leader, request, std::move(done), LeaseCallError,
          [](peerpb::RaftPeer::Stub* stub, grpc::ClientContext* context, const auto* req, auto* resp, auto cb) {
            stub->async()->LeaseRenew(context, req, resp, std::move(cb));
          });
}

void LeaderForwarder::TimeToLive(uint64_t leader, const etcdserverpb::LeaseTimeToLiveRequest& request,
                                std::function<void(absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse>)> done) {
  Forward(channels_, timeout_ms_, leader, request, std::move(done), LeaseCallError,
          [](peerpb::RaftPeer::Stub* stub, grpc::ClientContext* context, const auto* req, auto* resp, auto cb) {
            stub->async()->LeaseTimeToLive(context, req, resp, std::move(cb));
          });
}

void LeaderForwarder::PromoteLearner(uint64_t leader, const etcdserverpb::MemberPromoteRequest& request,
                                     std::function<void(absl::StatusOr<etcdserverpb::MemberPromoteResponse>)> done) {
  Forward(channels_, timeout_ms_, leader, request, std::move(done), PromoteError,
          [](peerpb::RaftPeer::Stub* stub, grpc::ClientContext* context, const auto* req, auto* resp, auto cb) {
            stub->async()->MemberPromote(context, req, resp, std::move(cb));
          });
}

}  // namespace leasehold::server
