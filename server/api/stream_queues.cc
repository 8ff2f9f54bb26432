#include "server/api/stream_queues.h"

#include <sched.h>

#include <algorithm>
#include <chrono>

#include "absl/synchronization/notification.h"

namespace leasehold::server {

// One stream: its context, its operations' tags and its handler. Every operation started holds a
// count, and so does the call's done notification; the last to complete ends the stream.
class StreamCall {
 public:
  StreamCall(StreamQueues* owner, grpc::CompletionQueue* queue)
      : owner_(owner), queue_(queue), stream_(&context_) {
    owner_->calls_.fetch_add(1, std::memory_order_relaxed);
    // Must be asked before the call is; it is delivered only for a call that was accepted.
    context_.AsyncNotifyWhenDone(&done_tag_);
  }
  ~StreamCall() { owner_->calls_.fetch_sub(1, std::memory_order_release); }

  // A completion queue tag: which call, and what completed.
  struct Tag {
    StreamCall* call;
    void (StreamCall::*complete)(bool ok);
  };

  void Bind(AsyncBidiReactor* reactor) { reactor_ = reactor; }
  void Request() {
    owner_->request_(&context_, &stream_, queue_, owner_->announce_.get(), &accept_tag_);
  }

  void StartRead(grpc::ByteBuffer* buffer) {
    pending_.fetch_add(1, std::memory_order_relaxed);
    stream_.Read(buffer, &read_tag_);
  }
  void StartWrite(const grpc::ByteBuffer* buffer, grpc::WriteOptions options) {
    pending_.fetch_add(1, std::memory_order_relaxed);
    stream_.Write(*buffer, options, &write_tag_);
  }
  void Finish(grpc::Status status) {
    pending_.fetch_add(1, std::memory_order_relaxed);
    stream_.Finish(status, &finish_tag_);
  }

 private:
  void Accepted(bool ok) {
    if (!ok) {  // the server is shutting down: no call, and no done notification
      delete this;
      return;
    }
    owner_->RequestNext();
    owner_->make_(this, context_);  // binds itself (AsyncBidiReactor's constructor)
    bound_.Notify();
  }
  void ReadDone(bool ok) {
    reactor_->OnReadDone(ok);
    Release();
  }
  void WriteDone(bool ok) {
    reactor_->OnWriteDone(ok);
    Release();
  }
  void FinishDone(bool /*ok*/) { Release(); }
  void CallDone(bool /*ok*/) {
    // gRPC starts watching for the call's end as it hands the call over, so a call its client reset
    // before it was taken ends at once, possibly while the announcing thread is still making its
    // handler (a moment's wait, on nothing else).
    bound_.WaitForNotification();
    if (context_.IsCancelled()) reactor_->OnCancel();
    Release();
  }
  void Release() {
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    reactor_->OnDone();
    delete this;
  }

  StreamQueues* const owner_;
  grpc::CompletionQueue* const queue_;  // the call's operations complete here
  grpc::ServerContext context_;
  StreamQueues::Stream stream_;
  AsyncBidiReactor* reactor_ = nullptr;
  std::atomic<int> pending_{1};  // the done notification's, once the call is accepted
  absl::Notification bound_;     // the handler is made
  Tag accept_tag_{this, &StreamCall::Accepted};
  Tag read_tag_{this, &StreamCall::ReadDone};
  Tag write_tag_{this, &StreamCall::WriteDone};
  Tag finish_tag_{this, &StreamCall::FinishDone};
  Tag done_tag_{this, &StreamCall::CallDone};
};

AsyncBidiReactor::AsyncBidiReactor(StreamCall* call) : call_(call) { call_->Bind(this); }

void AsyncBidiReactor::StartRead(grpc::ByteBuffer* buffer) { call_->StartRead(buffer); }
void AsyncBidiReactor::StartWrite(const grpc::ByteBuffer* buffer, grpc::WriteOptions options) {
  call_->StartWrite(buffer, options);
}
void AsyncBidiReactor::Finish(grpc::Status status) { call_->Finish(std::move(status)); }

namespace {
// A queue that never polls: completions arrive from the threads that do (see the header).
class NonPollingQueue final : public grpc::CompletionQueue {
 public:
  NonPollingQueue()
      : grpc::CompletionQueue(grpc_completion_queue_attributes{
            GRPC_CQ_CURRENT_VERSION, GRPC_CQ_NEXT, GRPC_CQ_NON_POLLING, nullptr}) {}
};

// How often new calls are looked for: soon after one came, as streams tend to open in bursts;
// less often while none come, as each look takes a turn at polling (see the header).
constexpr auto kLookSoon = std::chrono::milliseconds(1);
constexpr auto kLookIdle = std::chrono::milliseconds(16);
constexpr int kWaitingRequests = 16;
}  // namespace

StreamQueues::StreamQueues(grpc::ServerBuilder& builder, int queues)
    : announce_(builder.AddCompletionQueue(/*is_frequently_polled=*/false)) {
  for (int i = 0; i < queues; ++i) queues_.push_back(std::make_unique<NonPollingQueue>());
}

StreamQueues::~StreamQueues() { Stop(); }

void StreamQueues::Start(RequestCall request, MakeReactor make) {
  request_ = std::move(request);
  make_ = std::move(make);
  // Several requests wait at once, so that a burst of new streams is taken in one look.
  for (int i = 0; i < kWaitingRequests; ++i) RequestNext();
  for (auto& queue : queues_) threads_.emplace_back([q = queue.get()] { Serve(q); });
  threads_.emplace_back([this] { DrainAnnouncements(); });
}

void StreamQueues::RequestNext() {
  grpc::CompletionQueue* queue = queues_[next_queue_].get();
  next_queue_ = (next_queue_ + 1) % queues_.size();
  (new StreamCall(this, queue))->Request();
}

void StreamQueues::Serve(grpc::CompletionQueue* queue) {
  // Every write completes here, one wake-up each. As a normal thread, each woken one took the core
  // from the thread writing the next stream's response (a watch fan-out writes thousands in a row):
  // two context switches per response, half the time of a 10,000-stream fan-out. A batch thread
  // never preempts at wake-up; it runs when a core is free or at the next tick.
  sched_param param{};
  sched_setscheduler(0, SCHED_BATCH, &param);
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) {
    auto* t = static_cast<StreamCall::Tag*>(tag);
    (t->call->*t->complete)(ok);
  }
}

void StreamQueues::DrainAnnouncements() {
  void* tag = nullptr;
  bool ok = false;
  std::chrono::milliseconds interval = kLookSoon;
  for (;;) {
    // A deadline already past: take what is there without waiting in (and polling for) the queue.
    const auto now = std::chrono::system_clock::now();
    grpc::CompletionQueue::NextStatus status;
    bool got = false;
    while ((status = announce_->AsyncNext(&tag, &ok, now)) == grpc::CompletionQueue::GOT_EVENT) {
      auto* t = static_cast<StreamCall::Tag*>(tag);
      (t->call->*t->complete)(ok);
      got = true;
    }
    if (status == grpc::CompletionQueue::SHUTDOWN) return;
    interval = got ? kLookSoon : std::min(interval * 2, kLookIdle);
    if (!stop_announcing_.load(std::memory_order_acquire)) std::this_thread::sleep_for(interval);
  }
}

void StreamQueues::Stop() {
  if (stopped_) return;
  stopped_ = true;
  // grpc::Server::Shutdown returns once every call is gone, but the requests it refused may still
  // be on their way through the announcing queue; a queue shut down under a handler's last
  // operation would abort the process.
  if (!threads_.empty()) {
    while (calls_.load(std::memory_order_acquire) > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop_announcing_.store(true, std::memory_order_release);
  announce_->Shutdown();
  for (auto& queue : queues_) queue->Shutdown();
  if (threads_.empty()) {
    void* tag = nullptr;
    bool ok = false;
    while (announce_->Next(&tag, &ok)) {
    }
    for (auto& queue : queues_) {
      while (queue->Next(&tag, &ok)) {
      }
    }
  }
  for (auto& thread : threads_) thread.join();
}

}  // namespace leasehold::server
