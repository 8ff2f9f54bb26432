// DelayProxy: a TCP relay in front of one member's peer port, inside the member's network
// namespace, that holds what it relays for a chosen delay (mean ± jitter, drawn per chunk read,
// order kept) when the nemesis asks; this kernel has no netem to do it below TCP. It listens where
// the other members reach the member (its bridge address) and relays to the member's real peer
// listener on the namespace's loopback, so the namespace's iptables rules, which match the peers'
// addresses, still cut and thin the traffic before it reaches the relay.
//
// Each connection costs four threads (a reader and a writer per direction). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace leasehold::faults {

// The delay every relay applies now; 0 mean: none.
struct PeerDelay {
  std::atomic<int> mean_ms{0};
  std::atomic<int> jitter_ms{0};
};

class DelayProxy {
 public:
  // Enters the namespace at `namespace_path` (on a thread of its own; empty: stays in this one),
  // listens on `listen_address`:`listen_port` (0: any free port) and relays each connection to
  // 127.0.0.1:`target_port` there.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DelayProxy>> Start(
      const std::string& namespace_path, const std::string& listen_address, int listen_port,
      int target_port, std::shared_ptr<const PeerDelay> delay, uint64_t seed);
  ~DelayProxy();  // Stop()
  // Closes the listener and every connection, and joins the threads.
  void Stop();
  int port() const { return port_; }

 private:
  struct Connection;
  DelayProxy(int target_port, std::shared_ptr<const PeerDelay> delay, uint64_t seed);
  // On the acceptor thread: enters the namespace and listens (the outcome goes to `ready`), then
  // accepts until stopped.
  void Run(const std::string& namespace_path, const std::string& listen_address, int listen_port,
           std::promise<absl::Status>* ready);
  void Relay(int client_fd);
  // Joins and forgets the connections whose four threads have finished.
  void ReapFinished() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::atomic<int> listen_fd_{-1};
  int port_ = 0;  // set before Start returns
  const int target_port_;
  const std::shared_ptr<const PeerDelay> delay_;
  const uint64_t seed_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  absl::Mutex mu_;
  std::list<std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
  uint64_t accepted_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace leasehold::faults
