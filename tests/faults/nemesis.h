// The nemesis: on a seeded random schedule, injects one fault at a time into a NetnsCluster, holds
// it, heals it, waits for the cluster to elect a leader, and has the workloads check that no
// acknowledged write was lost. Each fault's window is recorded.
//
// Kinds: kill (kill -9 a minority, the leader half the time; restart at heal), powercut (as kill,
// but the members lose power: what they never synced is lost, torn at a random byte), pause
// (SIGSTOP a minority, the leader half the time, for longer than a lease TTL and an election
// timeout), partition (random majority/minority, the leader isolated, a bridge, a ring), loss (a
// share of the packets on every peer link dropped; TCP's retransmissions then delay the rest).
#pragma once

#include <atomic>
#include <cstdint>
#include <random>
#include <set>
#include <string>

#include "tests/faults/netns_cluster.h"
#include "tests/faults/workloads.h"

namespace leasehold::faults {

struct NemesisOptions {
  std::set<std::string> kinds = {"kill", "pause", "partition", "loss"};
  uint64_t seed = 1;
  int64_t lease_ttl_s = 3;
};

class Nemesis {
 public:
  Nemesis(NetnsCluster* cluster, Workloads* workloads, Recorder* recorder,
          const CampaignClock* clock, NemesisOptions options);

  // Runs faults until `stop` is set, then heals everything.
  void Run(const std::atomic<bool>& stop);
  // Heals every fault: resumes, restarts, reconnects. Safe to call at any time.
  void HealAll();
  // Waits (up to `seconds`) until a member reports a leader; -1 if none did.
  int AwaitLeader(double seconds);
  int64_t faults_injected() const { return injected_; }

  static bool Known(const std::string& kind);

 private:
  std::vector<int> Victims(bool prefer_leader);
  // Applies one fault; returns its description (targets).
  std::string Inject(const std::string& kind);
  void Heal(const std::string& kind);

  NetnsCluster* cluster_;
  Workloads* workloads_;
  Recorder* recorder_;
  const CampaignClock* clock_;
  NemesisOptions options_;
  std::mt19937_64 rng_;
  std::vector<int> down_;  // members killed or paused by the current fault
  int64_t injected_ = 0;
};

}  // namespace leasehold::faults
