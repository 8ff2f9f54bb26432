// Finishing a unary gRPC call with the result of a proposal: the shared shape of every write.
#pragma once

#include <grpcpp/grpcpp.h>

#include "server/api/caller.h"
#include "server/api/grpc_status.h"
#include "server/member/member.h"

namespace leasehold::server {

inline grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                           const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// Proposes `entry` on behalf of the call's user (whose permissions are checked when it is applied,
// while auth is enabled); when it is applied, `extract` moves the typed response out of the result
// into `response`, whose header is then filled, and the call finishes. Errors finish it with etcd's
// status. A call cancelled while its entry waits for a leader is not proposed (Proposer::Propose).
template <typename Response, typename Extract>
grpc::ServerUnaryReactor* ProposeAndFinish(grpc::CallbackServerContext* context, Member* member,
                                           internalpb::InternalRequest entry, Response* response,
                                           Extract extract) {
  absl::StatusOr<std::string> user = CallerOf(*member, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  entry.mutable_caller()->set_user(std::move(*user));
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member->Submit(
      std::move(entry),
      [member, reactor, response, extract](storage::ApplyResult result) {
        if (!result.status.ok()) {
          reactor->Finish(ToGrpcStatus(result.status));
          return;
        }
        extract(result.response, response);
        member->FillHeader(response->mutable_header());
        reactor->Finish(grpc::Status::OK);
      },
      // The context lives until the call finishes, which only `done` does.
      [context] { return context->IsCancelled(); });
  return reactor;
}

}  // namespace leasehold::server
