// leasehold-bench: a load generator for any etcd v3 gRPC server (Leasehold or etcd itself).
#include <cstdio>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "client/bench/connections.h"
#include "client/bench/idle_watchers.h"
#include "client/bench/options.h"
#include "client/bench/report.h"
#include "client/bench/workloads.h"

int main(int argc, char** argv) {
  using namespace leasehold::bench;
  // Debian's Abseil checks lock order on every lock gRPC takes: the generator's own overhead, not
  // the server's (the server turns it off too).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  Options options = ParseOptions(argc, argv);
  Connections connections(options);
  if (!connections.WaitReady(10)) {
    std::fprintf(stderr, "leasehold-bench: cannot connect to %s\n",
                 options.endpoints.front().c_str());
    return 1;
  }
  std::unique_ptr<IdleWatchers> idle;
  if (options.idle_watch_streams > 0) {
    idle =
        std::make_unique<IdleWatchers>(connections, options.idle_watch_streams, /*timeout_s=*/60);
    if (!idle->ready()) {
      std::fprintf(stderr,
                   "leasehold-bench: %d idle watch streams were not all created within 60 s\n",
                   options.idle_watch_streams);
      return 1;
    }
  }
  Report report;
  std::string error;
  if (!RunWorkload(options, connections, &report, &error)) {
    std::fprintf(stderr, "leasehold-bench: %s\n", error.c_str());
    return 2;
  }
  if (idle) report.extras.emplace_back("idle_watch_streams", options.idle_watch_streams);
  std::fputs((options.json ? FormatJson(report) : FormatText(report)).c_str(), stdout);
  return 0;
}
