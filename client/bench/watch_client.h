// A client Watch stream carrying many watchers. Creates are answered in order, so each `created`
// response is matched to the oldest pending create. Callbacks run on gRPC's threads, one at a time
// per stream, and must not block.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <unordered_map>

#include <grpcpp/grpcpp.h>

#include "etcdserverpb/rpc.grpc.pb.h"

namespace leasehold::bench {

class WatchClient final
    : public grpc::ClientBidiReactor<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse> {
 public:
  // Called for every response with events for the watcher; return false to cancel the watcher.
  using OnEvents = std::function<bool(const etcdserverpb::WatchResponse&)>;

  explicit WatchClient(etcdserverpb::Watch::Stub* stub);
  // Creates a watcher; `on_created` (may be empty) runs once the server confirms it.
  void Watch(etcdserverpb::WatchCreateRequest create, OnEvents on_events,
             std::function<void()> on_created = {});
  // Cancels the stream; Wait() returns after the server has closed it.
  void Close();
  void Wait();

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  struct Pending {
    OnEvents on_events;
    std::function<void()> on_created;
  };
  void SendLocked(etcdserverpb::WatchRequest request);

  grpc::ClientContext context_;
  etcdserverpb::WatchResponse response_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::deque<etcdserverpb::WatchRequest> to_send_;
  bool writing_ = false;
  std::deque<Pending> awaiting_created_;
  std::unordered_map<int64_t, OnEvents> watchers_;
};

}  // namespace leasehold::bench
