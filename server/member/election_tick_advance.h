// etcd's --initial-election-tick-advance (default true): a member of a multi-member cluster that
// starts up waits (polling every 50 ms, at most 5 s) until it is connected to more than one of its
// peers, then lets all but two ticks of an election timeout pass at once, so that a cluster whose
// members start together elects a leader soon instead of a whole election timeout later. When the
// connections do not come up in time, nothing is advanced. With the flag false it logs that it
// skips this. (A sole member needs none of it: it campaigns as it starts.)
#pragma once

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/synchronization/notification.h"

namespace leasehold::server {

class NodeLoop;

class ElectionTickAdvance {
 public:
  // `active_peers` counts the other members this one is connected to.
  ElectionTickAdvance(NodeLoop* node, std::function<int()> active_peers, int election_ticks,
                      int64_t tick_ms);
  ~ElectionTickAdvance() { Stop(); }
  // Logs what it does, as etcd does, and starts waiting for the peers (when `enabled`).
  void Start(bool enabled);
  void Stop();

 private:
  void Run();

  NodeLoop* const node_;
  const std::function<int()> active_peers_;
  const int election_ticks_;
  const int64_t tick_ms_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace leasehold::server
