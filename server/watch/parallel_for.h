// Splits a loop over [0, n) across a few threads and waits for all of it: used where one thread
// would otherwise do a long run of independent slow calls (a watch event fanned out to thousands of
// streams, each StartWrite doing its own socket write). Thread-safe; one Run at a time (callers
// serialize, e.g. under their own lock).
//
// The workers run at the lowest CPU priority (nice 19), so that on a busy machine the loop gives
// way to everything else. Blocks go to the caller instead (at its own priority) while its
// `caller_helps` counter is above zero, to the workers otherwise. That is for a caller that holds a
// lock through Run: whoever waits for that lock raises the counter and calls Nudge, and the loop
// finishes at normal speed instead of holding them back at the workers' priority.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace leasehold::server {

class ParallelFor {
 public:
  // `workers` threads besides the caller (0: everything runs on the caller).
  explicit ParallelFor(int workers);
  ~ParallelFor();

  // Calls fn(begin, end) on disjoint blocks of at most `block` items covering [0, n), handed out in
  // order to whichever thread takes the next (the caller or the workers, as above); returns when
  // every block is done. Runs everything on the caller when n < `min_parallel` or there are no
  // workers.
  void Run(size_t n, size_t block, size_t min_parallel,
           const std::function<void(size_t begin, size_t end)>& fn,
           const std::atomic<int>& caller_helps);
  // Makes a Run in progress look at its `caller_helps` again (after it changed).
  void Nudge();

 private:
  void Worker();
  // Whether blocks go to the caller now. Only while a Run is in progress.
  bool CallerTakesBlocks() const;
  // Takes and runs blocks of the current Run until none is left, or until they go to the other
  // side.
  void RunBlocks(bool worker);

  absl::Mutex mu_;
  // A Run's work: written under mu_ while no worker is active, read without it by whoever takes
  // its blocks (a worker becomes active under mu_, after the writes).
  const std::function<void(size_t, size_t)>* fn_ = nullptr;
  const std::atomic<int>* caller_helps_ = nullptr;
  size_t n_ = 0;
  size_t block_ = 1;
  std::atomic<size_t> next_{0};             // the first item not yet handed out
  size_t done_ ABSL_GUARDED_BY(mu_) = 0;    // items finished in this Run
  size_t active_ ABSL_GUARDED_BY(mu_) = 0;  // workers taking this Run's blocks
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace leasehold::server
