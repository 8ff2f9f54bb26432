// RAFT_CHECK: aborts the process when a Raft invariant is broken (never a recoverable error).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace leasehold::raft::internal {

[[noreturn]] inline void CheckFailed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "RAFT_CHECK failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace leasehold::raft::internal

#define RAFT_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) ::leasehold::raft::internal::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (0)
