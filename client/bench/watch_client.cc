#include "client/bench/watch_client.h"

namespace leasehold::bench {

WatchClient::WatchClient(etcdserverpb::Watch::Stub* stub) {
  stub->async()->Watch(&context_, this);
  StartRead(&response_);
  StartCall();
}

void WatchClient::Watch(etcdserverpb::WatchCreateRequest create, OnEvents on_events,
                        std::function<void()> on_created) {
  std::lock_guard<std::mutex> lock(mu_);
  awaiting_created_.push_back({std::move(on_events), std::move(on_created)});
  etcdserverpb::WatchRequest request;
  *request.mutable_create_request() = std::move(create);
  SendLocked(std::move(request));
}

void WatchClient::SendLocked(etcdserverpb::WatchRequest request) {
  to_send_.push_back(std::move(request));
  if (!writing_) {
    writing_ = true;
    StartWrite(&to_send_.front());
  }
}

void WatchClient::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  to_send_.pop_front();
  writing_ = false;
  if (ok && !to_send_.empty()) {
    writing_ = true;
    StartWrite(&to_send_.front());
  }
}

void WatchClient::OnReadDone(bool ok) {
  if (!ok) return;
  std::function<void()> created_callback;
  OnEvents handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t id = response_.watch_id();
    if (response_.created() && !awaiting_created_.empty()) {
      Pending pending = std::move(awaiting_created_.front());
      awaiting_created_.pop_front();
      if (!response_.canceled()) watchers_[id] = std::move(pending.on_events);
      created_callback = std::move(pending.on_created);
    }
    if (response_.events_size() > 0) {
      auto it = watchers_.find(id);
      if (it != watchers_.end()) handler = it->second;
    }
  }
  if (created_callback) created_callback();
  if (handler && !handler(response_)) {
    std::lock_guard<std::mutex> lock(mu_);
    watchers_.erase(response_.watch_id());
    etcdserverpb::WatchRequest cancel;
    cancel.mutable_cancel_request()->set_watch_id(response_.watch_id());
    SendLocked(std::move(cancel));
  }
  StartRead(&response_);
}

void WatchClient::Close() { context_.TryCancel(); }

void WatchClient::OnDone(const grpc::Status&) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  done_cv_.notify_all();
}

void WatchClient::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return done_; });
}

}  // namespace leasehold::bench
