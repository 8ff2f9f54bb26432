#include "server/api/lease_service.h"

#include "common/etcd_errors.h"
#include "server/api/keep_alive_reactor.h"
#include "server/api/propose_reactor.h"

namespace leasehold::server {

grpc::ServerUnaryReactor* LeaseService::LeaseGrant(grpc::CallbackServerContext* context,
                                                   const etcdserverpb::LeaseGrantRequest* request,
                                                   etcdserverpb::LeaseGrantResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::InternalRequest entry;
  *entry.mutable_lease_grant() = *request;
  // A server-chosen id is picked before proposing, so it travels in the log.
  if (request->id() == 0) entry.mutable_lease_grant()->set_id(member_->NextId());
  return ProposeAndFinish(
      context, member_, std::move(entry), response,
      [](internalpb::InternalResponse& r, etcdserverpb::LeaseGrantResponse* out) {
        out->Swap(r.mutable_lease_grant());
      });
}

grpc::ServerUnaryReactor* LeaseService::LeaseRevoke(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::LeaseRevokeRequest* request,
                                                    etcdserverpb::LeaseRevokeResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  // Core leases timing blob leases are invisible to the etcd API (the expiry loop revokes them).
  if (member_->state_machine().IsBlobCoreLease(request->id()))
    return FinishNow(context, errors::LeaseNotFound());
  internalpb::InternalRequest entry;
  *entry.mutable_lease_revoke() = *request;
  return ProposeAndFinish(
      context, member_, std::move(entry), response,
      [](internalpb::InternalResponse& r, etcdserverpb::LeaseRevokeResponse* out) {
        out->Swap(r.mutable_lease_revoke());
      });
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* LeaseService::LeaseKeepAlive(
    grpc::CallbackServerContext* context) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) {
    return new RefusedBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>(ToGrpcStatus(st));
  }
  return new KeepAliveReactor(member_, &router_);
}

grpc::ServerUnaryReactor* LeaseService::LeaseTimeToLive(
    grpc::CallbackServerContext* context, const etcdserverpb::LeaseTimeToLiveRequest* request,
    etcdserverpb::LeaseTimeToLiveResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  // The answer names the lease's keys: while auth is on, the caller must be allowed to read them.
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  if (absl::Status st = member_->state_machine().CheckLeaseKeysReadable(*user, request->id());
      !st.ok()) {
    return FinishNow(context, st);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  router_.LeaseTimeToLive(
      *request, [context] { return !context->IsCancelled(); },
      [this, reactor, response](absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> answer) {
        if (!answer.ok()) {
          reactor->Finish(ToGrpcStatus(answer.status()));
          return;
        }
        *response = std::move(*answer);
        member_->FillHeader(response->mutable_header());
        reactor->Finish(grpc::Status::OK);
      });
  return reactor;
}

grpc::ServerUnaryReactor* LeaseService::LeaseLeases(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::LeaseLeasesRequest* request,
                                                    etcdserverpb::LeaseLeasesResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  const auto& sm = member_->state_machine();
  for (int64_t id : sm.leases().Ids()) {
    if (!sm.IsBlobCoreLease(id)) response->add_leases()->set_id(id);
  }
  member_->FillHeader(response->mutable_header());
  return FinishNow(context, absl::OkStatus());
}

}  // namespace leasehold::server
