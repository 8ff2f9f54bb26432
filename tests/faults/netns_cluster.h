// A cluster of real leasehold processes, each in its own network namespace on a bridge, with the
// faults a nemesis needs: kill -9 and restart, SIGSTOP / SIGCONT, partitions and packet loss on the
// peer links (iptables inside each namespace; the host, where the clients run, always reaches
// every member), and power cuts (the member loses what it never synced; LEASEHOLD_FAULT_POWER_CUT).
// Needs root (namespaces, iptables). Not thread-safe: one nemesis thread drives it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/faults/delay_proxy.h"

namespace leasehold::faults {

struct ClusterOptions {
  int nodes = 3;
  std::string binary;       // the leasehold executable
  std::string work_dir;     // data dirs and logs go here
  bool power_cuts = false;  // members run with the power-cut fault armed for SIGUSR2
  // Peer traffic goes through a DelayProxy in front of each member, for SetPeerDelay.
  bool delay_proxies = false;
  uint64_t seed = 1;  // for the power cuts' torn tails
  int election_ms = 1000;
  // The members' --snapshot-count and --experimental-snapshot-catchup-entries: small, so that
  // logs are compacted often and a member cut off for a while needs a snapshot to catch up.
  int snapshot_count = 500;
  int snapshot_catchup_entries = 100;
  int heartbeat_ms = 100;
};

class NetnsCluster {
 public:
  // Makes the bridge and namespaces and starts every member. Unavailable where namespaces cannot be
  // made (not root, no iproute2).
  static absl::StatusOr<std::unique_ptr<NetnsCluster>> Create(const ClusterOptions& options);
  ~NetnsCluster();  // Shutdown()
  // Kills the members, removes the namespaces and the bridge; Start fails from then on. Safe to
  // call from another thread than the one driving the cluster (a signal handler thread).
  void Shutdown();

  int size() const { return options_.nodes; }
  std::string ClientEndpoint(
      int i) const;  // host:port of member i's gRPC (reachable from the host)
  std::string BlobEndpoint(int i) const;

  absl::Status Start(int i);
  void Kill(int i);  // SIGKILL, reaped
  void Pause(int i);
  void Resume(int i);
  bool running(int i) const { return members_[i].pid > 0; }
  bool paused(int i) const { return members_[i].paused; }
  // Cuts the links between a and b both ways.
  absl::Status Cut(int a, int b);
  // Drops `probability` of the packets on every peer link.
  absl::Status Lossy(double probability);
  // Holds every peer message for mean ± jitter ms (needs delay_proxies); 0: no delay.
  void SetPeerDelay(int mean_ms, int jitter_ms);
  // Removes every cut and loss rule, and any delay.
  absl::Status HealNetwork();
  // Cuts member i's power (needs power_cuts): it drops what it wrote but never synced, torn at a
  // random byte, and exits, reaped here. Returns the bytes it lost, as its log says; -1 when it
  // did not cut (no write came within a few seconds, or it was paused) and was killed instead.
  int64_t PowerCut(int i);
  // How many snapshots from a leader member i has installed, as its log says.
  int SnapshotsInstalled(int i) const;
  std::string data_dir(int i) const;
  std::string log_path(int i) const;

 private:
  struct Member {
    pid_t pid = -1;
    bool paused = false;
  };
  explicit NetnsCluster(ClusterOptions options);
  absl::Status Setup();
  void Teardown();
  std::string Namespace(int i) const;
  std::string Address(int i) const;  // subnet.(i+1)
  absl::Status InNamespace(int i, const std::string& command) const;

  ClusterOptions options_;
  std::string tag_;
  std::string subnet_;  // a.b.c
  std::vector<Member> members_;
  std::shared_ptr<PeerDelay> peer_delay_ = std::make_shared<PeerDelay>();
  std::vector<std::unique_ptr<DelayProxy>> proxies_;
  bool set_up_ = false;
  std::atomic<bool> shut_down_{false};
};

// Runs `command` through the shell; Internal with its exit status when it fails.
absl::Status Shell(const std::string& command);

}  // namespace leasehold::faults
