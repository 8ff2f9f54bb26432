#include "server/api/lock_service.h"

#include "client/leasehold/mutex.h"
#include "client/leasehold/queue_wait.h"
#include "server/api/caller.h"
#include "server/api/grpc_status.h"
#include "server/api/propose_reactor.h"
#include "server/api/session_lease.h"

namespace leasehold::server {
namespace {

// The deletion of a lock key on behalf of `user`: Unlock's, and a waiter's that gives up.
internalpb::InternalRequest DeleteLockKey(const std::string& key, const std::string& user) {
  internalpb::InternalRequest entry;
  entry.mutable_delete_range()->set_key(key);
  entry.mutable_caller()->set_user(user);
  return entry;
}

grpc::Status LockError(const absl::Status& status) {
  // The caller's lease ended while it waited: its key is gone and the lock is not held. etcd 3.4
  // answered success here (the bug Jepsen reported as #11456); its fix reports this error.
  if (absl::IsFailedPrecondition(status))
    return grpc::Status(grpc::StatusCode::UNKNOWN, "mutex: session is expired");
  return EmbeddedClientError(status);
}

// A caller refused before its call starts, with the error etcd's lock server passes on from its
// embedded client (as every error of these calls).
grpc::ServerUnaryReactor* FinishEmbedded(grpc::CallbackServerContext* context,
                                         const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(EmbeddedClientError(status));
  return reactor;
}

// One Lock call. The caller's key is enqueued by a proposal of this member's own, and a free lock
// is answered as soon as that applies, on the thread that applied it. A contended lock waits in
// LockWaiters (no thread of its own) and is answered as the release before it is applied here; a
// call cancelled meanwhile leaves the queue. Holds a BlockingCalls slot, claimed up front, until it
// finishes, so that shutting down waits for it. Deleted once both the work and gRPC are done.
class LockReactor final : public grpc::ServerUnaryReactor {
 public:
  LockReactor(Member* member, BlockingCalls* calls, LockWaiters* waiters, std::string user,
              const v3lockpb::LockRequest* request, v3lockpb::LockResponse* response)
      : member_(member),
        calls_(calls),
        waiters_(waiters),
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
    grant.mutable_lease_grant()->set_ttl(kSessionTtlSeconds);
    Propose(std::move(grant), [this](storage::ApplyResult result) {
      if (!result.status.ok()) return Done(EmbeddedClientError(result.status));
      Enqueue(result.response.lease_grant().id());
    });
  }

  void OnCancel() override {
    cancelled_ = true;
    if (const int64_t id = waiter_id_.load(); id != 0) waiters_->Cancel(id);
  }
  void OnDone() override { Unref(); }

 private:
  void Propose(internalpb::InternalRequest entry, Proposer::Done done) {
    entry.mutable_caller()->set_user(user_);
    member_->Submit(std::move(entry), std::move(done), [this] { return cancelled_.load(); });
  }

  void Enqueue(int64_t lease) {
    key_ = Mutex::KeyOf(request_->name(), lease);
    internalpb::InternalRequest entry;
    *entry.mutable_txn() = EnqueueTxn(Mutex::PrefixOf(request_->name()), key_, "", lease);
    Propose(std::move(entry), [this](storage::ApplyResult result) {
      if (!result.status.ok()) return Done(EmbeddedClientError(result.status));
      auto place = PlaceOf(result.response.txn(), key_);
      if (!place.ok()) return Done(EmbeddedClientError(place.status()));
      if (place->first) return Answer(place->revision);
      // The wait may end (and the call with it) before Wait returns: hold on to this meanwhile.
      owners_.fetch_add(1);
      const int64_t id =
          waiters_->Wait(Mutex::PrefixOf(request_->name()), key_, place->create_revision,
                         [this](absl::StatusOr<int64_t> held_at) { Waited(held_at); });
      waiter_id_ = id;
      if (cancelled_.load()) waiters_->Cancel(id);
      Unref();
    });
  }

  void Waited(const absl::StatusOr<int64_t>& held_at) {
    if (held_at.ok()) return Answer(*held_at);
    if (absl::IsFailedPrecondition(held_at.status())) return Done(LockError(held_at.status()));
    // Leave the queue so that those behind are not held up by a key nobody waits on.
    const grpc::Status status = LockError(held_at.status());
    member_->Submit(DeleteLockKey(key_, user_),
                    [this, status](storage::ApplyResult) { Done(status); });
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
  LockWaiters* const waiters_;
  const std::string user_;
  const v3lockpb::LockRequest* const request_;
  v3lockpb::LockResponse* const response_;
  std::string key_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> waiter_id_{0};
  std::atomic<int> owners_{2};  // the work and gRPC
};

}  // namespace

grpc::ServerUnaryReactor* LockService::Lock(grpc::CallbackServerContext* context,
                                            const v3lockpb::LockRequest* request,
                                            v3lockpb::LockResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishEmbedded(context, user.status());
  grpc::Status refusal;
  if (calls_->Acquire(&refusal) == nullptr) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(refusal);
    return reactor;
  }
  return new LockReactor(member_, calls_, waiters_, std::move(*user), request, response);
}

grpc::ServerUnaryReactor* LockService::Unlock(grpc::CallbackServerContext* context,
                                              const v3lockpb::UnlockRequest* request,
                                              v3lockpb::UnlockResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishEmbedded(context, user.status());
  // A delete of the key, proposed directly (as etcd's lock server deletes it with its client).
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member_->Submit(
      DeleteLockKey(request->key(), *user),
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
