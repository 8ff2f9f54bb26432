#include "client/bench/load.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace leasehold::bench {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MicrosSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
}

// Shared bookkeeping of one load run.
struct Run {
  LoadSpec spec;
  const AsyncOp* op;
  ShardedHistogram histogram;
  std::atomic<int64_t> issued{0};
  std::atomic<int64_t> completed{0};
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, int64_t> errors;
  int clients_done = 0;
  Clock::time_point start;
  Clock::time_point deadline;
  Clock::time_point last_completion;

  void Record(int client, int64_t micros, const grpc::Status& status) {
    histogram.Record(static_cast<size_t>(client), micros);
    completed.fetch_add(1, std::memory_order_relaxed);
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      ++errors[StatusCodeName(status.error_code())];
    }
  }
};

// Launches are trampolined through this thread when callbacks nest too deeply (an operation that
// fails at once may call back inline), so a dead server cannot overflow the stack.
class Trampoline {
 public:
  Trampoline() : thread_([this] { Loop(); }) {}
  ~Trampoline() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

thread_local int launch_depth = 0;

void LaunchClosed(Run* run, Trampoline* trampoline, int client) {
  const bool stopped = run->spec.stop != nullptr && run->spec.stop->load();
  const bool more = !stopped && (run->spec.total > 0 ? run->issued.fetch_add(1) < run->spec.total
                                                     : Clock::now() < run->deadline);
  if (!more) {
    std::lock_guard<std::mutex> lock(run->mu);
    ++run->clients_done;
    run->last_completion = std::max(run->last_completion, Clock::now());
    run->cv.notify_all();
    return;
  }
  const auto started = Clock::now();
  (*run->op)(client, [run, trampoline, client, started](const grpc::Status& status) {
    run->Record(client, MicrosSince(started), status);
    if (++launch_depth > 16) {
      trampoline->Post([run, trampoline, client] { LaunchClosed(run, trampoline, client); });
    } else {
      LaunchClosed(run, trampoline, client);
    }
    --launch_depth;
  });
}

}  // namespace

int64_t LoadResult::error_count() const {
  int64_t n = 0;
  for (const auto& [code, count] : errors) n += count;
  return n;
}

std::string StatusCodeName(grpc::StatusCode code) {
  static const char* kNames[] = {"OK",
                                 "CANCELLED",
                                 "UNKNOWN",
                                 "INVALID_ARGUMENT",
                                 "DEADLINE_EXCEEDED",
                                 "NOT_FOUND",
                                 "ALREADY_EXISTS",
                                 "PERMISSION_DENIED",
                                 "RESOURCE_EXHAUSTED",
                                 "FAILED_PRECONDITION",
                                 "ABORTED",
                                 "OUT_OF_RANGE",
                                 "UNIMPLEMENTED",
                                 "INTERNAL",
                                 "UNAVAILABLE",
                                 "DATA_LOSS",
                                 "UNAUTHENTICATED"};
  int i = static_cast<int>(code);
  return i >= 0 && i <= 16 ? kNames[i] : "CODE_" + std::to_string(i);
}

LoadResult RunLoad(const LoadSpec& spec, const AsyncOp& op) {
  Run run;
  run.spec = spec;
  run.op = &op;
  run.start = Clock::now();
  run.last_completion = run.start;
  run.deadline = run.start + std::chrono::microseconds(static_cast<int64_t>(spec.duration_s * 1e6));
  Trampoline trampoline;

  if (spec.rate <= 0) {
    for (int c = 0; c < spec.clients; ++c) LaunchClosed(&run, &trampoline, c);
    std::unique_lock<std::mutex> lock(run.mu);
    run.cv.wait(lock, [&] { return run.clients_done == spec.clients; });
  } else {
    // Open loop: operation i starts at start + i / rate, on whichever client slot is next.
    const double interval_us = 1e6 / spec.rate;
    for (int64_t i = 0;; ++i) {
      auto intended = run.start + std::chrono::microseconds(
                                      static_cast<int64_t>(static_cast<double>(i) * interval_us));
      if (spec.total > 0 ? i >= spec.total : intended >= run.deadline) break;
      if (spec.stop != nullptr && spec.stop->load()) break;
      std::this_thread::sleep_until(intended);
      run.issued.fetch_add(1);
      const int client = static_cast<int>(i % spec.clients);
      op(client, [&run, client, intended](const grpc::Status& status) {
        run.Record(client, MicrosSince(intended), status);
        std::lock_guard<std::mutex> lock(run.mu);
        run.last_completion = Clock::now();
        run.cv.notify_all();
      });
    }
    std::unique_lock<std::mutex> lock(run.mu);
    // Every operation carries a deadline, so every one completes.
    run.cv.wait(lock, [&] { return run.completed.load() >= run.issued.load(); });
  }

  LoadResult result;
  result.latency = run.histogram.Merged();
  result.ops = run.completed.load();
  {
    std::lock_guard<std::mutex> lock(run.mu);
    result.errors = run.errors;
    result.seconds = std::chrono::duration<double>(run.last_completion - run.start).count();
  }
  return result;
}

}  // namespace leasehold::bench
