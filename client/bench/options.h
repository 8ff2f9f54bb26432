// leasehold-bench's flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace leasehold::bench {

struct Options {
  std::string workload;
  std::vector<std::string> endpoints = {"127.0.0.1:2379"};
  // TLS, as etcdctl's flags: on for https:// endpoints or a --cacert; --cert and --key present a
  // client certificate.
  bool tls = false;
  std::string cacert, cert, key;
  int conns = 16;          // gRPC connections, shared round-robin by clients
  int clients = 256;       // concurrent closed-loop clients (or streams)
  int64_t total = 0;       // operations to run; 0: use duration
  double duration_s = 10;  // when total is 0
  double rate = 0;         // > 0: open loop at this many operations per second
  bool json = false;
  // workload parameters
  int64_t ttl = 60;           // lease TTL for lease workloads
  bool revoke = true;         // lease-grant: revoke each granted lease
  bool with_key = false;      // lease-grant: put a key under lease-keys/ with each lease
  int leases_per_stream = 1;  // lease-keepalive
  int key_size = 8;
  int value_size = 256;
  int64_t key_space = 100000;
  bool with_lease = false;    // put: attach a lease (one per client)
  bool serializable = false;  // range
  int watchers_per_stream =
      1;            // watch-fanout: watchers multiplexed on one stream, as etcd clients do
  int writers = 0;  // watch-fanout: > 0: this many closed-loop writers (saturation), not --rate
  int locks = 0;    // txn-lock: number of lock names (0: one per client, uncontended)
  int64_t storm_leases = 100000;  // expiry-storm
  int64_t storm_ttl = 5;
  double storm_put_rate = 500;         // background puts per second during the storm
  double storm_drain_timeout_s = 600;  // after the last deadline
  int idle_watch_streams = 0;  // any workload: streams held open meanwhile, one idle watcher each
};

// Exits with a usage message on bad flags.
Options ParseOptions(int argc, char** argv);

}  // namespace leasehold::bench
