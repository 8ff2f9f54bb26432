// The benchmark workloads. Each sets up what it needs, runs its load and reports.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "client/bench/connections.h"
#include "client/bench/load.h"
#include "client/bench/options.h"

namespace leasehold::bench {

struct Report {
  std::string workload;
  LoadResult load;
  // Workload-specific figures, printed after the standard ones (name, value).
  std::vector<std::pair<std::string, double>> extras;
};

// Returns false with a message for an unknown workload name.
bool RunWorkload(const Options& options, Connections& connections, Report* report,
                 std::string* error);

}  // namespace leasehold::bench
