// etcdserverpb.Lease: grant and revoke are proposed; keep-alive, time-to-live and the lease list
// are answered by the primary from its LeaseCollection.
#pragma once

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/member/leader_router.h"
#include "server/member/member.h"

namespace leasehold::server {

// LeaseKeepAlive is served raw, so that a request that does not parse ends the stream as etcd's
// does (see KeepAliveReactor).
using LeaseServiceBase = etcdserverpb::Lease::WithCallbackMethod_LeaseGrant<
    etcdserverpb::Lease::WithCallbackMethod_LeaseRevoke<
        etcdserverpb::Lease::WithRawCallbackMethod_LeaseKeepAlive<
            etcdserverpb::Lease::WithCallbackMethod_LeaseTimeToLive<
                etcdserverpb::Lease::WithCallbackMethod_LeaseLeases<
                    etcdserverpb::Lease::Service>>>>>;

class LeaseService final : public LeaseServiceBase {
 public:
  static constexpr const char kRawMethod[] = "/etcdserverpb.Lease/LeaseKeepAlive";

  explicit LeaseService(Member* member)
      : member_(member), router_(member, absl::Milliseconds(member->config().request_timeout_ms)) {}

  grpc::ServerUnaryReactor* LeaseGrant(grpc::CallbackServerContext* context,
                                       const etcdserverpb::LeaseGrantRequest* request,
                                       etcdserverpb::LeaseGrantResponse* response) override;
  grpc::ServerUnaryReactor* LeaseRevoke(grpc::CallbackServerContext* context,
                                        const etcdserverpb::LeaseRevokeRequest* request,
                                        etcdserverpb::LeaseRevokeResponse* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* LeaseKeepAlive(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* LeaseTimeToLive(
      grpc::CallbackServerContext* context, const etcdserverpb::LeaseTimeToLiveRequest* request,
      etcdserverpb::LeaseTimeToLiveResponse* response) override;
  grpc::ServerUnaryReactor* LeaseLeases(grpc::CallbackServerContext* context,
                                        const etcdserverpb::LeaseLeasesRequest* request,
                                        etcdserverpb::LeaseLeasesResponse* response) override;

 private:
  Member* member_;
  LeaderRouter router_;  // keep-alives' and time-to-live calls' way to the leader
};

}  // namespace leasehold::server
