// leasehold-bench: a load generator for any etcd v3 gRPC server (Leasehold or etcd itself).
#include <cstdio>

#include "client/bench/connections.h"
#include "client/bench/options.h"
#include "client/bench/report.h"
#include "client/bench/workloads.h"

int main(int argc, char** argv) {
  using namespace leasehold::bench;
  Options options = ParseOptions(argc, argv);
  Connections connections(options);
  if (!connections.WaitReady(10)) {
    std::fprintf(stderr, "leasehold-bench: cannot connect to %s\n", options.endpoints.front().c_str());
    return 1;
  }
  Report report;
  std::string error;
  if (!RunWorkload(options, connections, &report, &error)) {
    std::fprintf(stderr, "leasehold-bench: %s\n", error.c_str());
    return 2;
  }
  std::fputs((options.json ? FormatJson(report) : FormatText(report)).c_str(), stdout);
  return 0;
}
