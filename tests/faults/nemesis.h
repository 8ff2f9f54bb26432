// The nemesis: on a seeded random schedule, injects one fault at a time into a NetnsCluster, holds
// it, heals it, waits for the cluster to elect a leader, and has the workloads check that no
// acknowledged write was lost. Each fault's window is recorded.
//
// Kinds: kill (kill -9 a minority, the leader half the time; restart at heal), powercut (as kill,
// but the members lose power: what they never synced is lost, torn at a random byte), pause
// (SIGSTOP a minority, the leader half the time, for longer than a lease TTL and an election
// timeout), partition (random majority/minority, the leader isolated, a bridge, a ring), loss (a
// share of the packets on every peer link dropped; TCP's retransmissions then delay the rest),
// delay (every peer message held 75 ± 50 ms by relays in front of the members), blackhole (one
// member, the leader half the time, cut off from the others until they have written more than a
// compacted log keeps, so that it can only catch up from a snapshot; whether it installed one is
// recorded).
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
  // Entries past which the others have compacted away what a member cut off then still needs:
  // the members' snapshot count plus catch-up entries, with a margin.
  int64_t compacted_past_entries = 700;
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
  // The current blackhole: held until the others' Raft index has moved past what their compacted
  // logs keep (or a minute), then whether the member caught up from a snapshot.
  void HoldBlackhole(const std::atomic<bool>& stop);
  std::string BlackholeOutcome(int victim);

  std::vector<int> down_;  // members killed, paused or cut off by the current fault
  int64_t blackhole_from_index_ = 0;
  int blackhole_snapshots_before_ = 0;
  int64_t injected_ = 0;
};

}  // namespace leasehold::faults
