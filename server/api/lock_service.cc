#include "server/api/lock_service.h"

#include "client/leasehold/client.h"
#include "client/leasehold/mutex.h"
#include "server/api/grpc_status.h"
#include "server/api/propose_reactor.h"
#include "server/api/session_lease.h"

namespace leasehold::server {
namespace {

grpc::Status LockError(const absl::Status& status) {
  // The caller's lease ended while it waited: its key is gone and the lock is not held. etcd 3.4
  // answered success here (the bug Jepsen reported as #11456); its fix reports this error.
  if (absl::IsFailedPrecondition(status))
    return grpc::Status(grpc::StatusCode::UNKNOWN, "mutex: session is expired");
  return EmbeddedClientError(status);
}

}  // namespace

grpc::ServerUnaryReactor* LockService::Lock(grpc::CallbackServerContext* context,
                                            const v3lockpb::LockRequest* request,
                                            v3lockpb::LockResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return calls_->Unary(context,
                       [this, request, response](Client& client, const CancellationToken& cancel) {
                         auto lease = SessionLease(&client, request->lease());
                         if (!lease.ok()) return EmbeddedClientError(lease.status());
                         Mutex mutex(&client, request->name(), *lease);
                         auto token = mutex.Lock(absl::InfiniteDuration(), cancel);
                         if (!token.ok()) return LockError(token.status());
                         response->mutable_header()->set_revision(token->revision);
                         member_->FillHeader(response->mutable_header());
                         response->set_key(token->key);
                         return grpc::Status::OK;
                       });
}

grpc::ServerUnaryReactor* LockService::Unlock(grpc::CallbackServerContext* context,
                                              const v3lockpb::UnlockRequest* request,
                                              v3lockpb::UnlockResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return calls_->Unary(context, [request, response](Client& client, const CancellationToken&) {
    auto deleted = client.Delete(request->key());
    if (!deleted.ok()) return EmbeddedClientError(deleted.status());
    *response->mutable_header() = deleted->header();
    return grpc::Status::OK;
  });
}

}  // namespace leasehold::server
