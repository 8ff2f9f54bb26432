// The streaming half of BlockingCalls (a template, so it lives in a header); include
// blocking_calls.h.
#pragma once

#include <deque>
#include <thread>

#include "server/api/grpc_status.h"

namespace leasehold::server {

// A server-streaming call whose messages come from a handler running on its own thread. Writes go
// out one at a time from a small queue; the handler blocks while the queue is full. Deleted when
// both the handler has returned and gRPC is done with the call.
template <typename Message>
class ThreadedWriteReactor final : public grpc::ServerWriteReactor<Message> {
 public:
  ThreadedWriteReactor(BlockingCalls* calls, Client* client,
                       typename BlockingCalls::StreamHandler<Message> handler)
      : calls_(calls) {
    std::thread([this, client, handler = std::move(handler)] {
      grpc::Status status =
          handler(*client, source_.token(), [this](const Message& m) { return Write(m); });
      {
        absl::MutexLock lock(&mu_);
        handler_done_ = true;
        final_status_ = std::move(status);
        MaybeFinishLocked();
      }
      calls_->Release();
      Unref();
    }).detach();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    queue_.pop_front();
    if (!ok) {
      broken_ = true;
      source_.Cancel("the client went away");
    } else if (!queue_.empty()) {
      writing_ = true;
      this->StartWrite(&queue_.front());
    }
    MaybeFinishLocked();
  }
  void OnCancel() override { source_.Cancel("the call was cancelled"); }
  void OnDone() override { Unref(); }

 private:
  static constexpr size_t kMaxQueued = 64;

  bool Write(const Message& message) {
    absl::MutexLock lock(&mu_);
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return queue_.size() < kMaxQueued || broken_;
    };
    mu_.Await(absl::Condition(&room));
    if (broken_ || source_.token().cancelled()) return false;
    queue_.push_back(message);
    if (!writing_) {
      writing_ = true;
      this->StartWrite(&queue_.front());
    }
    return true;
  }
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || !handler_done_ || writing_) return;
    finished_ = true;
    this->Finish(final_status_);
  }
  void Unref() { DropOwner(owners_, this); }

  BlockingCalls* const calls_;
  CancellationSource source_;
  absl::Mutex mu_;
  std::deque<Message> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool handler_done_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> owners_{2};  // the handler thread and gRPC
};

template <typename Message>
grpc::ServerWriteReactor<Message>* BlockingCalls::Stream(grpc::CallbackServerContext* context,
                                                         StreamHandler<Message> handler) {
  grpc::Status refusal;
  Client* client = Acquire(&refusal);
  if (client == nullptr) {
    return new RefusedWriteReactor<Message>(refusal);
  }
  return new ThreadedWriteReactor<Message>(this, client,
                                           ActAsCaller(*context, *client, std::move(handler)));
}

template <typename AnyHandler>
AnyHandler BlockingCalls::ActAsCaller(const grpc::CallbackServerContext& context, Client& shared,
                                      AnyHandler handler) {
  std::shared_ptr<Client> own = CallerClient(context, shared);
  if (own == nullptr) return handler;
  return [own, handler = std::move(handler)](Client&, const CancellationToken& cancel,
                                             auto&&... rest) {
    return handler(*own, cancel, std::forward<decltype(rest)>(rest)...);
  };
}

}  // namespace leasehold::server
