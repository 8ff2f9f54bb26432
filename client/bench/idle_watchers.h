// Idle watch streams held open around a workload: a service registry's many watchers of keys that
// rarely change. Each stream holds one watcher on a key nobody writes, so the workload measures
// what open streams cost every other call, not event delivery.
#pragma once

#include <memory>
#include <vector>

#include "client/bench/connections.h"
#include "client/bench/watch_client.h"

namespace leasehold::bench {

class IdleWatchers {
 public:
  // Opens `streams` streams over the connections and returns once the server has confirmed every
  // watcher (or after `timeout_s`; ready() tells which).
  IdleWatchers(Connections& connections, int streams, double timeout_s);
  // Cancels the streams and waits for the server to close them.
  ~IdleWatchers();
  bool ready() const { return ready_; }

 private:
  std::vector<std::unique_ptr<WatchClient>> streams_;
  bool ready_ = false;
};

}  // namespace leasehold::bench
