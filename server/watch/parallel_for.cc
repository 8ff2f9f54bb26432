#include "server/watch/parallel_for.h"

#include <algorithm>

namespace leasehold::server {

ParallelFor::ParallelFor(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i)
    workers_.emplace_back([this, i] { Worker(static_cast<size_t>(i)); });
}

ParallelFor::~ParallelFor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : workers_) t.join();
}

namespace {

// Chunk `index` of `parts` over [0, n).
std::pair<size_t, size_t> Chunk(size_t n, size_t parts, size_t index) {
  return {n * index / parts, n * (index + 1) / parts};
}

}  // namespace

void ParallelFor::Run(size_t n, size_t min_parallel,
                      const std::function<void(size_t, size_t)>& fn) {
  if (workers_.empty() || n < min_parallel) {
    fn(0, n);
    return;
  }
  const size_t parts = workers_.size() + 1;
  {
    absl::MutexLock lock(&mu_);
    fn_ = &fn;
    n_ = n;
    pending_ = workers_.size();
    ++generation_;
  }
  auto [begin, end] = Chunk(n, parts, 0);
  fn(begin, end);
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](size_t* pending) { return *pending == 0; }, &pending_));
  fn_ = nullptr;
}

void ParallelFor::Worker(size_t index) {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(size_t, size_t)>* fn;
    size_t n;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, &seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || generation_ != seen;
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      seen = generation_;
      fn = fn_;
      n = n_;
    }
    auto [begin, end] = Chunk(n, workers_.size() + 1, index);
    (*fn)(begin, end);
    absl::MutexLock lock(&mu_);
    --pending_;
  }
}

}  // namespace leasehold::server
