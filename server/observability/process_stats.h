// This process's resource use as Prometheus' standard process_* metrics report it (the Go client's
// names, which etcd exposes and `etcdctl check datascale` reads), from /proc on Linux.
#pragma once

#include "absl/status/statusor.h"

namespace leasehold::server {

struct ProcessStats {
  double cpu_seconds = 0;         // process_cpu_seconds_total: user + system
  double resident_bytes = 0;      // process_resident_memory_bytes
  double virtual_bytes = 0;       // process_virtual_memory_bytes
  double start_time_seconds = 0;  // process_start_time_seconds, since the Unix epoch
  double open_fds = 0;            // process_open_fds
  double max_fds = 0;             // process_max_fds: the soft limit
  // process_virtual_memory_max_bytes: the address-space soft limit (2^64 when unlimited, as Go's
  // client reports it).
  double virtual_max_bytes = 0;
};

[[nodiscard]] absl::StatusOr<ProcessStats> ReadProcessStats();

}  // namespace leasehold::server
