#include "server/api/lock_service.h"

#include <thread>

#include "client/leasehold/client.h"
#include "client/leasehold/mutex.h"
#include "client/leasehold/queue_wait.h"
#include "server/api/caller.h"
#include "server/api/grpc_status.h"
#include "server/api/propose_reactor.h"

namespace leasehold::server {
namespace {

constexpr int64_t kDefaultSessionTtlSeconds = 60;  // etcd's session default

grpc::Status LockError(const absl::Status& status) {
  // The caller's lease ended while it waited: its key is gone and the lock is not held. etcd 3.4
  // answered success here (the bug Jepsen reported as #11456); its fix reports this error.
  if (absl::IsFailedPrecondition(status))
    return grpc::Status(grpc::StatusCode::UNKNOWN, "mutex: session is expired");
  return EmbeddedClientError(status);
}

// One Lock call. The caller's key is enqueued by a proposal of this member's own, and a free lock
// is answered as soon as that applies, on the thread that applied it. Only a contended lock waits,
// on a thread of its own (BlockingCalls' slot, claimed up front), for the keys ahead to go, through
// the member's in-process client; cancelled there, it gives up its place. Deleted once both the
// work and gRPC are done with it.
class LockReactor final : public grpc::ServerUnaryReactor {
 public:
  LockReactor(Member* member, BlockingCalls* calls, Client* client,
              std::shared_ptr<Client> caller_client, std::string user,
              const v3lockpb::LockRequest* request, v3lockpb::LockResponse* response)
      : member_(member),
        calls_(calls),
        client_(caller_client ? caller_client.get() : client),
        caller_client_(std::move(caller_client)),
        user_(std::move(user)),
        request_(request),
        response_(response) {
    if (request_->lease() != 0) {
      Enqueue(request_->lease());
      return;
    }
    // As etcd's: a lease of 0 gets a fresh session lease.
    internalpb::InternalRequest grant;
    grant.mutable_lease_grant()->set_id(member_->NextId());
    grant.mutable_lease_grant()->set_ttl(kDefaultSessionTtlSeconds);
    Propose(std::move(grant), [this](storage::ApplyResult result) {
      if (!result.status.ok()) return Done(EmbeddedClientError(result.status));
      Enqueue(result.response.lease_grant().id());
    });
  }

  void OnCancel() override { source_.Cancel("the call was cancelled"); }
  void OnDone() override { Unref(); }

 private:
  void Propose(internalpb::InternalRequest entry, Proposer::Done done) {
    entry.mutable_caller()->set_user(user_);
    const CancellationToken cancel = source_.token();
    member_->Submit(std::move(entry), std::move(done), [cancel] { return cancel.cancelled(); });
  }

  void Enqueue(int64_t lease) {
    prefix_ = Mutex::PrefixOf(request_->name());
    key_ = Mutex::KeyOf(request_->name(), lease);
    internalpb::InternalRequest entry;
    *entry.mutable_txn() = EnqueueTxn(prefix_, key_, "", lease);
    Propose(std::move(entry), [this](storage::ApplyResult result) {
      if (!result.status.ok()) return Done(EmbeddedClientError(result.status));
      auto place = PlaceOf(result.response.txn(), key_);
      if (!place.ok()) return Done(EmbeddedClientError(place.status()));
      if (place->first) return Answer(place->revision);
      const int64_t create_revision = place->create_revision;
      std::thread([this, create_revision] { Wait(create_revision); }).detach();
    });
  }

  void Wait(int64_t create_revision) {
    auto held_at = WaitUntilFirst(client_, prefix_, key_, create_revision, absl::InfiniteFuture(),
                                  source_.token());
    if (held_at.ok()) return Answer(*held_at);
    // Leave the queue so that those behind are not held up by a key nobody waits on.
    if (!absl::IsFailedPrecondition(held_at.status())) client_->Delete(key_).IgnoreError();
    Done(LockError(held_at.status()));
  }

  void Answer(int64_t revision) {
    response_->mutable_header()->set_revision(revision);
    member_->FillHeader(response_->mutable_header());
    response_->set_key(key_);
    Done(grpc::Status::OK);
  }

  void Done(const grpc::Status& status) {
    Finish(status);
    calls_->Release();
    Unref();
  }

  void Unref() { DropOwner(owners_, this); }

  Member* const member_;
  BlockingCalls* const calls_;
  Client* const client_;
  const std::shared_ptr<Client> caller_client_;  // owns client_ when the call carries a token
  const std::string user_;
  const v3lockpb::LockRequest* const request_;
  v3lockpb::LockResponse* const response_;
  std::string prefix_, key_;
  CancellationSource source_;
  std::atomic<int> owners_{2};  // the work and gRPC
};

}  // namespace

grpc::ServerUnaryReactor* LockService::Lock(grpc::CallbackServerContext* context,
                                            const v3lockpb::LockRequest* request,
                                            v3lockpb::LockResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  grpc::Status refusal;
  Client* client = calls_->Acquire(&refusal);
  if (client == nullptr) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(refusal);
    return reactor;
  }
  return new LockReactor(member_, calls_, client, BlockingCalls::CallerClient(*context, *client),
                         std::move(*user), request, response);
}

grpc::ServerUnaryReactor* LockService::Unlock(grpc::CallbackServerContext* context,
                                              const v3lockpb::UnlockRequest* request,
                                              v3lockpb::UnlockResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  // A delete of the key, proposed directly (as etcd's lock server deletes it with its client).
  internalpb::InternalRequest entry;
  entry.mutable_delete_range()->set_key(request->key());
  entry.mutable_caller()->set_user(std::move(*user));
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member_->Submit(
      std::move(entry),
      [this, reactor, response](storage::ApplyResult result) {
        if (!result.status.ok()) return reactor->Finish(EmbeddedClientError(result.status));
        response->mutable_header()->Swap(result.response.mutable_delete_range()->mutable_header());
        member_->FillHeader(response->mutable_header());
        reactor->Finish(grpc::Status::OK);
      },
      [context] { return context->IsCancelled(); });
  return reactor;
}

}  // namespace leasehold::server
