#include "server/api/kv_service.h"

#include "server/api/propose_reactor.h"
#include "server/api/request_validation.h"

namespace leasehold::server {

grpc::ServerUnaryReactor* KvService::Range(grpc::CallbackServerContext* context,
                                           const etcdserverpb::RangeRequest* request,
                                           etcdserverpb::RangeResponse* response) {
  // A serializable read is the one read a learner answers (Member::LearnerRefusal).
  if (!request->serializable()) {
    if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  }
  if (absl::Status st = ValidateRange(*request); !st.ok()) return FinishNow(context, st);
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  auto serve = [this, request, response, user = std::move(*user)]() -> absl::Status {
    // Checked when serving, so a linearizable read sees every permission change before it.
    if (absl::Status st = member_->state_machine().auth().CheckRange(
            user, request->key(), request->range_end(), storage::Access::kRead);
        !st.ok()) {
      return st;
    }
    auto result = member_->state_machine().Range(*request);
    if (!result.ok()) return result.status();
    *response = std::move(*result);
    member_->FillHeader(response->mutable_header());
    return absl::OkStatus();
  };
  // A serializable read is served from whatever this member has applied.
  if (request->serializable()) return FinishNow(context, serve());
  // A linearizable one first waits until this member has applied every write committed before it
  // arrived (ReadIndex), wherever it was committed.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member_->proposer().ReadBarrier([reactor, serve](absl::Status barrier) {
    reactor->Finish(ToGrpcStatus(barrier.ok() ? serve() : barrier));
  });
  return reactor;
}

grpc::ServerUnaryReactor* KvService::Put(grpc::CallbackServerContext* context,
                                         const etcdserverpb::PutRequest* request,
                                         etcdserverpb::PutResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  if (absl::Status st = ValidatePut(*request); !st.ok()) return FinishNow(context, st);
  internalpb::InternalRequest entry;
  *entry.mutable_put() = *request;
  return ProposeAndFinish(context, member_, std::move(entry), response,
                          [](internalpb::InternalResponse& r, etcdserverpb::PutResponse* out) {
                            out->Swap(r.mutable_put());
                          });
}

grpc::ServerUnaryReactor* KvService::DeleteRange(grpc::CallbackServerContext* context,
                                                 const etcdserverpb::DeleteRangeRequest* request,
                                                 etcdserverpb::DeleteRangeResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  if (absl::Status st = ValidateDeleteRange(*request); !st.ok()) return FinishNow(context, st);
  internalpb::InternalRequest entry;
  *entry.mutable_delete_range() = *request;
  return ProposeAndFinish(
      context, member_, std::move(entry), response,
      [](internalpb::InternalResponse& r, etcdserverpb::DeleteRangeResponse* out) {
        out->Swap(r.mutable_delete_range());
      });
}

grpc::ServerUnaryReactor* KvService::Txn(grpc::CallbackServerContext* context,
                                         const etcdserverpb::TxnRequest* request,
                                         etcdserverpb::TxnResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  if (absl::Status st = ValidateTxn(*request, member_->config().max_txn_ops); !st.ok()) {
    return FinishNow(context, st);
  }
  if (storage::StateMachine::IsReadOnly(*request)) {
    absl::StatusOr<std::string> user = CallerOf(*member_, *context);
    if (!user.ok()) return FinishNow(context, user.status());
    // Served like a linearizable Range: after the read barrier, from the applied state.
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    member_->proposer().ReadBarrier([this, reactor, request, response,
                                     user = std::move(*user)](absl::Status barrier) {
      if (!barrier.ok()) return reactor->Finish(ToGrpcStatus(barrier));
      if (absl::Status st = member_->state_machine().CheckReadOnlyTxn(user, *request); !st.ok()) {
        return reactor->Finish(ToGrpcStatus(st));
      }
      auto result = member_->state_machine().ReadOnlyTxn(*request);
      if (result.ok()) {
        *response = std::move(*result);
        member_->FillHeader(response->mutable_header());
      }
      reactor->Finish(ToGrpcStatus(result.status()));
    });
    return reactor;
  }
  internalpb::InternalRequest entry;
  *entry.mutable_txn() = *request;
  return ProposeAndFinish(context, member_, std::move(entry), response,
                          [](internalpb::InternalResponse& r, etcdserverpb::TxnResponse* out) {
                            out->Swap(r.mutable_txn());
                          });
}

grpc::ServerUnaryReactor* KvService::Compact(grpc::CallbackServerContext* context,
                                             const etcdserverpb::CompactionRequest* request,
                                             etcdserverpb::CompactionResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::InternalRequest entry;
  *entry.mutable_compaction() = *request;
  return ProposeAndFinish(
      context, member_, std::move(entry), response,
      [](internalpb::InternalResponse& r, etcdserverpb::CompactionResponse* out) {
        out->Swap(r.mutable_compaction());
      });
}

}  // namespace leasehold::server
