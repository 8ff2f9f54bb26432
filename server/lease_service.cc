#include "server/lease_service.h"

#include "server/keep_alive_reactor.h"
#include "server/propose_reactor.h"

namespace leasehold::server {

grpc::ServerUnaryReactor* LeaseService::LeaseGrant(grpc::CallbackServerContext* context,
                                                   const etcdserverpb::LeaseGrantRequest* request,
                                                   etcdserverpb::LeaseGrantResponse* response) {
  internalpb::InternalRequest entry;
  *entry.mutable_lease_grant() = *request;
  // A server-chosen id is picked before proposing, so it travels in the log.
  if (request->id() == 0) entry.mutable_lease_grant()->set_id(member_->NextId());
  return ProposeAndFinish(context, member_, std::move(entry), response,
                          [](internalpb::InternalResponse& r, etcdserverpb::LeaseGrantResponse* out) {
                            out->Swap(r.mutable_lease_grant());
                          });
}

grpc::ServerUnaryReactor* LeaseService::LeaseRevoke(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::LeaseRevokeRequest* request,
                                                    etcdserverpb::LeaseRevokeResponse* response) {
  internalpb::InternalRequest entry;
  *entry.mutable_lease_revoke() = *request;
  return ProposeAndFinish(context, member_, std::move(entry), response,
                          [](internalpb::InternalResponse& r, etcdserverpb::LeaseRevokeResponse* out) {
                            out->Swap(r.mutable_lease_revoke());
                          });
}

grpc::ServerBidiReactor<etcdserverpb::LeaseKeepAliveRequest, etcdserverpb::LeaseKeepAliveResponse>*
LeaseService::LeaseKeepAlive(grpc::CallbackServerContext* context) {
  return new KeepAliveReactor(member_);
}

grpc::ServerUnaryReactor* LeaseService::LeaseTimeToLive(grpc::CallbackServerContext* context,
                                                        const etcdserverpb::LeaseTimeToLiveRequest* request,
                                                        etcdserverpb::LeaseTimeToLiveResponse* response) {
  response->set_id(request->id());
  auto ttl = member_->state_machine().leases().Lookup(request->id(), Member::NowUnixMs(), request->keys());
  if (!ttl) {
    // A missing lease is not an error: TTL -1 and granted TTL 0, as etcd answers.
    response->set_ttl(-1);
  } else {
    response->set_ttl(ttl->remaining_seconds);
    response->set_grantedttl(ttl->granted_ttl_seconds);
    for (auto& key : ttl->keys) response->add_keys(std::move(key));
  }
  member_->FillHeader(response->mutable_header());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* LeaseService::LeaseLeases(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::LeaseLeasesRequest* request,
                                                    etcdserverpb::LeaseLeasesResponse* response) {
  for (int64_t id : member_->state_machine().leases().Ids()) response->add_leases()->set_id(id);
  member_->FillHeader(response->mutable_header());
  return FinishNow(context, absl::OkStatus());
}

}  // namespace leasehold::server
