// Deterministic Raft simulation: N nodes on a seeded faulty network, with invariant checks.
//
// One seed fixes everything (cluster size, options, faults), so a failing seed replays exactly.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace leasehold::raft::sim {

struct SimOptions {
  uint64_t seed = 1;
  // Steps (ticks) with faults, followed by `calm_ticks` with the network healed.
  int chaos_steps = 3000;
  int calm_ticks = 300;
};

struct SimResult {
  bool ok = true;
  std::string failure;  // first violated invariant, with the step it happened at
  int nodes = 0;
  uint64_t committed = 0;      // final commit index
  uint64_t elections = 0;      // distinct leader terms seen
  uint64_t reads_checked = 0;  // ReadIndex results verified
  uint64_t crashes = 0;
  uint64_t snapshots_installed = 0;
  uint64_t sent_before_persisting = 0;  // Readys whose messages went out before their write
};

SimResult RunSimulation(const SimOptions& options);

// Installs a SIGABRT handler printing the seed being run, so RAFT_CHECK aborts are replayable.
void InstallSeedReporter();
void SetCurrentSeed(uint64_t seed);

}  // namespace leasehold::raft::sim
