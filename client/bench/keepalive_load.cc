#include "client/bench/keepalive_load.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace leasehold::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Shared {
  ShardedHistogram histogram;
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> not_found{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  int streams_done = 0;
  std::map<std::string, int64_t> stream_errors;
};

class KeepAliveStream final : public grpc::ClientBidiReactor<etcdserverpb::LeaseKeepAliveRequest,
                                                             etcdserverpb::LeaseKeepAliveResponse> {
 public:
  KeepAliveStream(etcdserverpb::Lease::Stub* stub, std::vector<int64_t> leases, Shared* shared,
                  int index)
      : shared_(shared), index_(index) {
    stub->async()->LeaseKeepAlive(&context_, this);
    StartRead(&response_);
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t id : leases) to_send_.push_back(id);
    WriteNextLocked();
    StartCall();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) return;
    if (!to_send_.empty()) {
      WriteNextLocked();
    } else {
      MaybeCloseLocked();
    }
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    const auto sent = sent_at_.front();
    sent_at_.pop_front();
    shared_->histogram.Record(
        static_cast<size_t>(index_),
        std::chrono::duration_cast<std::chrono::microseconds>(now - sent).count());
    shared_->completed.fetch_add(1, std::memory_order_relaxed);
    if (response_.ttl() <= 0) shared_->not_found.fetch_add(1, std::memory_order_relaxed);
    if (!shared_->stop.load(std::memory_order_relaxed)) {
      to_send_.push_back(response_.id());
      if (!writing_) WriteNextLocked();
    } else {
      MaybeCloseLocked();
    }
    StartRead(&response_);
  }

  void OnDone(const grpc::Status& status) override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!status.ok()) ++shared_->stream_errors[StatusCodeName(status.error_code())];
    ++shared_->streams_done;
    shared_->cv.notify_all();
  }

  grpc::ClientContext* context() { return &context_; }

  // After Shared::stop is set: closes the stream once nothing is in flight.
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    MaybeCloseLocked();
  }

 private:
  void WriteNextLocked() {
    if (to_send_.empty() || writing_ || closed_) return;
    request_.set_id(to_send_.front());
    to_send_.pop_front();
    sent_at_.push_back(Clock::now());
    writing_ = true;
    StartWrite(&request_);
  }
  void MaybeCloseLocked() {
    if (closed_ || writing_ || !sent_at_.empty() || !shared_->stop.load()) return;
    closed_ = true;
    StartWritesDone();
  }

  Shared* shared_;
  int index_;
  grpc::ClientContext context_;
  etcdserverpb::LeaseKeepAliveRequest request_;
  etcdserverpb::LeaseKeepAliveResponse response_;
  std::mutex mu_;
  std::deque<int64_t> to_send_;
  std::deque<Clock::time_point> sent_at_;
  bool writing_ = false;
  bool closed_ = false;
};

}  // namespace

LoadResult RunKeepAliveLoad(const Options& o, Connections& c, const std::vector<int64_t>& leases) {
  Shared shared;
  const auto start = Clock::now();
  std::vector<std::unique_ptr<KeepAliveStream>> streams;
  for (int i = 0; i < o.clients; ++i) {
    std::vector<int64_t> mine(leases.begin() + static_cast<long>(i) * o.leases_per_stream,
                              leases.begin() + static_cast<long>(i + 1) * o.leases_per_stream);
    streams.push_back(std::make_unique<KeepAliveStream>(c.lease(i), std::move(mine), &shared, i));
  }
  const auto deadline = start + std::chrono::microseconds(static_cast<int64_t>(o.duration_s * 1e6));
  while (Clock::now() < deadline && (o.total == 0 || shared.completed.load() < o.total)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  shared.stop = true;
  const auto stopped = Clock::now();
  // Streams close when their last in-flight request is answered; close those already idle.
  for (auto& s : streams) s->Stop();
  {
    std::unique_lock<std::mutex> lock(shared.mu);
    if (!shared.cv.wait_for(lock, std::chrono::seconds(10),
                            [&] { return shared.streams_done == o.clients; })) {
      for (auto& s : streams) s->context()->TryCancel();
      shared.cv.wait(lock, [&] { return shared.streams_done == o.clients; });
    }
  }
  LoadResult result;
  result.latency = shared.histogram.Merged();
  result.ops = shared.completed.load();
  result.seconds = std::chrono::duration<double>(stopped - start).count();
  result.errors = shared.stream_errors;
  if (shared.not_found > 0) result.errors["NOT_FOUND"] += shared.not_found.load();
  return result;
}

}  // namespace leasehold::bench
