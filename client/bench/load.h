// Drives an asynchronous operation at full speed (closed loop: each client starts its next
// operation when the previous one ends) or at a fixed rate (open loop: operations start on schedule
// whatever the server does, and latency counts from the scheduled start, so a stall is not hidden
// by the client waiting for it — no coordinated omission).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <grpcpp/grpcpp.h>

#include "client/bench/histogram.h"

namespace leasehold::bench {

struct LoadResult {
  Histogram latency;                      // µs, successful and failed operations alike
  int64_t ops = 0;                        // completed operations
  std::map<std::string, int64_t> errors;  // gRPC code name -> count
  double seconds = 0;
  double ops_per_second() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0; }
  int64_t error_count() const;
};

using OpDone = std::function<void(const grpc::Status&)>;
// Starts one operation for `client`; calls `done` exactly once, from any thread, without blocking.
using AsyncOp = std::function<void(int client, OpDone done)>;

struct LoadSpec {
  int clients = 1;
  int64_t total = 0;                        // stop after this many operations, or
  double duration_s = 10;                   // after this long
  double rate = 0;                          // > 0: open loop
  const std::atomic<bool>* stop = nullptr;  // when set and true, no new operation starts
};

LoadResult RunLoad(const LoadSpec& spec, const AsyncOp& op);

std::string StatusCodeName(grpc::StatusCode code);

}  // namespace leasehold::bench
