#include "server/api/blocking_calls.h"

#include <thread>

#include "client/leasehold/client.h"
#include "server/api/caller.h"

namespace leasehold::server {
namespace {

// A unary call answered by a handler on its own thread. Deleted when both the handler has returned
// and gRPC is done with the call.
class ThreadedUnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  ThreadedUnaryReactor(BlockingCalls* calls, Client* client, BlockingCalls::Handler handler)
      : calls_(calls) {
    std::thread([this, client, handler = std::move(handler)] {
      Finish(handler(*client, source_.token()));
      calls_->Release();
      Unref();
    }).detach();
  }
  void OnCancel() override { source_.Cancel("the call was cancelled"); }
  void OnDone() override { Unref(); }

 private:
  void Unref() { DropOwner(owners_, this); }

  BlockingCalls* const calls_;
  CancellationSource source_;
  std::atomic<int> owners_{2};  // the handler thread and gRPC
};

}  // namespace

std::shared_ptr<Client> BlockingCalls::CallerClient(const grpc::CallbackServerContext& context,
                                                    Client& shared) {
  std::string token = AuthTokenOf(context);
  if (token.empty()) return nullptr;
  return shared.WithAuthToken(std::move(token));
}

void BlockingCalls::Drain() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* running) { return *running == 0; }, &running_));
}

Client* BlockingCalls::Acquire(grpc::Status* refusal) {
  Client* client = client_.load();
  if (client == nullptr) {
    *refusal = grpc::Status(grpc::StatusCode::UNAVAILABLE, "etcdserver: not ready");
    return nullptr;
  }
  absl::MutexLock lock(&mu_);
  if (running_ >= max_running_) {
    *refusal = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "too many waiting calls");
    return nullptr;
  }
  ++running_;
  return client;
}

void BlockingCalls::Release() {
  absl::MutexLock lock(&mu_);
  --running_;
}

grpc::ServerUnaryReactor* BlockingCalls::Unary(grpc::CallbackServerContext* context,
                                               Handler handler) {
  grpc::Status refusal;
  Client* client = Acquire(&refusal);
  if (client == nullptr) {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(refusal);
    return reactor;
  }
  return new ThreadedUnaryReactor(this, client, ActAsCaller(*context, *client, std::move(handler)));
}

}  // namespace leasehold::server
