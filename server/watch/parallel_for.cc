#include "server/watch/parallel_for.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace leasehold::server {

ParallelFor::ParallelFor(int workers) {
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { Worker(); });
}

ParallelFor::~ParallelFor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : workers_) t.join();
}

void ParallelFor::Run(size_t n, size_t block, size_t min_parallel,
                      const std::function<void(size_t, size_t)>& fn,
                      const std::atomic<int>& caller_helps) {
  if (workers_.empty() || n < min_parallel) {
    fn(0, n);
    return;
  }
  mu_.Lock();
  // A worker that woke for the previous Run as it finished finds nothing left to take; wait until
  // it has seen so, as nobody may read these while they change.
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return active_ == 0; };
  mu_.Await(absl::Condition(&idle));
  fn_ = &fn;
  caller_helps_ = &caller_helps;
  n_ = n;
  block_ = std::max<size_t>(1, block);
  next_.store(0);
  done_ = 0;
  while (true) {
    if (CallerTakesBlocks()) {
      mu_.Unlock();
      RunBlocks(/*worker=*/false);
      mu_.Lock();
    }
    auto finished_or_helping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return (done_ == n_ && active_ == 0) || (next_.load() < n_ && CallerTakesBlocks());
    };
    mu_.Await(absl::Condition(&finished_or_helping));
    if (done_ == n_ && active_ == 0) break;
  }
  fn_ = nullptr;
  mu_.Unlock();
}

void ParallelFor::Nudge() {
  // Releasing the lock makes the waiting threads evaluate their conditions again.
  absl::MutexLock lock(&mu_);
}

bool ParallelFor::CallerTakesBlocks() const { return caller_helps_->load() > 0; }

void ParallelFor::RunBlocks(bool worker) {
  size_t finished = 0;
  while (true) {
    // Blocks go to the caller while it helps and to the workers otherwise. A worker's block taken
    // while the caller helps could sit unfinished, at the workers' priority, while whoever made the
    // caller help waits for it.
    if (CallerTakesBlocks() == worker) break;
    const size_t begin = next_.fetch_add(block_);
    if (begin >= n_) break;
    const size_t end = std::min(n_, begin + block_);
    (*fn_)(begin, end);
    finished += end - begin;
  }
  absl::MutexLock lock(&mu_);
  done_ += finished;
}

void ParallelFor::Worker() {
  // Raising one's own nice value needs no privilege (lowering it again would).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || (fn_ != nullptr && next_.load() < n_ && !CallerTakesBlocks());
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      ++active_;
    }
    RunBlocks(/*worker=*/true);
    absl::MutexLock lock(&mu_);
    --active_;
  }
}

}  // namespace leasehold::server
