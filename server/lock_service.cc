#include "server/lock_service.h"

#include "client/leasehold/client.h"
#include "client/leasehold/mutex.h"
#include "server/grpc_status.h"
#include "server/session_lease.h"

namespace leasehold::server {

grpc::ServerUnaryReactor* LockService::Lock(grpc::CallbackServerContext* context, const v3lockpb::LockRequest* request,
                                            v3lockpb::LockResponse* response) {
  return calls_->Unary(context, [this, request, response](Client& client, const CancellationToken& cancel) {
    auto lease = SessionLease(&client, request->lease());
    if (!lease.ok()) return ToGrpcStatus(lease.status());
    Mutex mutex(&client, request->name(), *lease);
    auto token = mutex.Lock(absl::InfiniteDuration(), cancel);
    if (!token.ok()) return ToGrpcStatus(token.status());
    response->mutable_header()->set_revision(token->revision);
    member_->FillHeader(response->mutable_header());
    response->set_key(token->key);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* LockService::Unlock(grpc::CallbackServerContext* context,
                                              const v3lockpb::UnlockRequest* request,
                                              v3lockpb::UnlockResponse* response) {
  return calls_->Unary(context, [request, response](Client& client, const CancellationToken&) {
    auto deleted = client.Delete(request->key());
    if (!deleted.ok()) return ToGrpcStatus(deleted.status());
    *response->mutable_header() = deleted->header();
    return grpc::Status::OK;
  });
}

}  // namespace leasehold::server
