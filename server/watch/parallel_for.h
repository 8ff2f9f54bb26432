// Splits a loop over [0, n) across a few threads and waits for all of it: used where one thread
// would otherwise do a long run of independent slow calls (a watch event fanned out to thousands of
// streams, each StartWrite doing its own socket write). Chunk 0 runs on the caller. Thread-safe;
// one Run at a time (callers serialize, e.g. under their own lock).
#pragma once

#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace leasehold::server {

class ParallelFor {
 public:
  // `threads` in all, the caller included (at least 1).
  explicit ParallelFor(int threads);
  ~ParallelFor();

  // Calls fn(begin, end) on disjoint chunks covering [0, n); returns when every chunk is done. Runs
  // everything on the caller when n < `min_parallel`.
  void Run(size_t n, size_t min_parallel, const std::function<void(size_t begin, size_t end)>& fn);

 private:
  void Worker(size_t index);

  absl::Mutex mu_;
  const std::function<void(size_t, size_t)>* fn_ ABSL_GUARDED_BY(mu_) = nullptr;
  size_t n_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  size_t pending_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace leasehold::server
