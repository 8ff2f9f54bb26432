#include "server/member/leader_forwarder.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "common/etcd_errors.h"
#include "leasehold/peer.grpc.pb.h"
#include "server/member/renew_batcher.h"

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
// unreachable or no longer leads, which to the client is "no leader" right now. (Resending a
// renewal or a time-to-live is harmless, so whether the call went out does not matter.)
absl::Status LeaseCallError(const grpc::Status& status, bool /*may_have_arrived*/) {
  if (status.error_code() == grpc::StatusCode::NOT_FOUND)
    return absl::NotFoundError(status.error_message());
  return errors::NoLeader();
}

// A membership change's errors. The leader's own answers (etcd's "etcdserver: ..." messages, some
// with code Unavailable, like "unhealthy cluster") keep their code and message. A call that never
// left this member (see NeverSent) is "no leader", which the router tries again. Otherwise the
// change may have been made: etcd's answers for an outcome unknown, "request timed out" after the
// deadline and "leader changed" for a lost connection.
absl::Status MembershipError(const grpc::Status& status, bool may_have_arrived) {
  if (absl::StartsWith(status.error_message(), "etcdserver: ")) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) return errors::RequestTimeout();
  return may_have_arrived ? errors::LeaderChanged() : errors::NoLeader();
}

// Whether a failed call certainly never reached the server. gRPC queues a call until its channel
// has a connection, and when none can be made it fails the call with Unavailable "failed to connect
// to all addresses" (gRPC 1.51's load-balancing pick failure). Any other failure may come after the
// request was written. The channel's state when the call starts says nothing either way: a call
// started while it is idle or connecting goes out once the connection is up.
bool NeverSent(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         absl::StartsWith(status.error_message(), "failed to connect to all addresses");
}

template <typename Request, typename Response, typename Start>
void Forward(const LeaderForwarder::ChannelSource& channels, int64_t timeout_ms, uint64_t leader,
             absl::Time give_up_at, const Request& request,
             std::function<void(absl::StatusOr<Response>)> done,
             absl::Status (*error_of)(const grpc::Status& status, bool may_have_arrived),
             Start start) {
  std::shared_ptr<grpc::Channel> channel = leader == 0 ? nullptr : channels(leader);
  // Nothing left of the caller's wait: send nothing, so that the answer says no leader was reached
  // rather than an outcome unknown.
  if (channel == nullptr || give_up_at <= absl::Now()) {
    done(errors::NoLeader());
    return;
  }
  auto* call = new Call<Request, Response>;
  call->request = request;
  call->done = std::move(done);
  call->stub = peerpb::RaftPeer::NewStub(channel);
  call->context.set_deadline(
      absl::ToChronoTime(std::min(give_up_at, absl::Now() + absl::Milliseconds(timeout_ms))));
  start(call->stub.get(), &call->context, &call->request, &call->response,
        [call, error_of](grpc::Status status) {
          // The call is gone before its caller hears of it, so nothing waits on the caller's side.
          absl::StatusOr<Response> answer =
              status.ok() ? absl::StatusOr<Response>(std::move(call->response))
                          : error_of(status, !NeverSent(status));
          auto done = std::move(call->done);
          delete call;
          done(std::move(answer));
        });
}

}  // namespace

LeaderForwarder::LeaderForwarder(ChannelSource channels, int64_t timeout_ms)
    : channels_(std::move(channels)),
      timeout_ms_(timeout_ms),
      renewals_(std::make_unique<RenewBatcher>(
          channels_, timeout_ms,
          [this](uint64_t leader, absl::Time give_up_at,
                 const etcdserverpb::LeaseKeepAliveRequest& request, RenewBatcher::Done done) {
            RenewOne(leader, give_up_at, request, std::move(done));
          })) {}

LeaderForwarder::~LeaderForwarder() = default;

void LeaderForwarder::Renew(
    uint64_t leader, absl::Time give_up_at, const etcdserverpb::LeaseKeepAliveRequest& request,
    std::function<void(absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse>)> done) {
  renewals_->Renew(leader, give_up_at, request, std::move(done));
}

void LeaderForwarder::RenewOne(
    uint64_t leader, absl::Time give_up_at, const etcdserverpb::LeaseKeepAliveRequest& request,
    std::function<void(absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse>)> done) {
  Forward(
      channels_, timeout_ms_, leader, give_up_at, request, std::move(done), LeaseCallError,
      [](peerpb::RaftPeer::Stub* stub, grpc::ClientContext* context, const auto* req, auto* resp,
         auto cb) { stub->async()->LeaseRenew(context, req, resp, std::move(cb)); });
}

void LeaderForwarder::TimeToLive(
    uint64_t leader, absl::Time give_up_at, const etcdserverpb::LeaseTimeToLiveRequest& request,
    std::function<void(absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse>)> done) {
  Forward(
      channels_, timeout_ms_, leader, give_up_at, request, std::move(done), LeaseCallError,
      [](peerpb::RaftPeer::Stub* stub, grpc::ClientContext* context, const auto* req, auto* resp,
         auto cb) { stub->async()->LeaseTimeToLive(context, req, resp, std::move(cb)); });
}

void LeaderForwarder::AddMember(
    uint64_t leader, absl::Time give_up_at, const etcdserverpb::MemberAddRequest& request,
    std::function<void(absl::StatusOr<etcdserverpb::MemberAddResponse>)> done) {
  Forward(channels_, timeout_ms_, leader, give_up_at, request, std::move(done), MembershipError,
          [](peerpb::RaftPeer::Stub* stub, grpc::ClientContext* context, const auto* req,
             auto* resp, auto cb) { stub->async()->MemberAdd(context, req, resp, std::move(cb)); });
}

void LeaderForwarder::RemoveMember(
    uint64_t leader, absl::Time give_up_at, const etcdserverpb::MemberRemoveRequest& request,
    std::function<void(absl::StatusOr<etcdserverpb::MemberRemoveResponse>)> done) {
  Forward(
      channels_, timeout_ms_, leader, give_up_at, request, std::move(done), MembershipError,
      [](peerpb::RaftPeer::Stub* stub, grpc::ClientContext* context, const auto* req, auto* resp,
         auto cb) { stub->async()->MemberRemove(context, req, resp, std::move(cb)); });
}

void LeaderForwarder::PromoteLearner(
    uint64_t leader, absl::Time give_up_at, const etcdserverpb::MemberPromoteRequest& request,
    std::function<void(absl::StatusOr<etcdserverpb::MemberPromoteResponse>)> done) {
  Forward(
      channels_, timeout_ms_, leader, give_up_at, request, std::move(done), MembershipError,
      [](peerpb::RaftPeer::Stub* stub, grpc::ClientContext* context, const auto* req, auto* resp,
         auto cb) { stub->async()->MemberPromote(context, req, resp, std::move(cb)); });
}

}  // namespace leasehold::server
