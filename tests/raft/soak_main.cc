// raft_soak: runs the deterministic simulation for any range of seeds.
// Usage: raft_soak [--seeds N] [--start S] [--steps K] [--verbose]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/raft/simulation.h"

int main(int argc, char** argv) {
  using leasehold::raft::sim::RunSimulation;
  uint64_t seeds = 100, start = 1;
  int steps = -1;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value for %s\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seeds")
      seeds = std::strtoull(next(), nullptr, 10);
    else if (a == "--start")
      start = std::strtoull(next(), nullptr, 10);
    else if (a == "--steps")
      steps = std::atoi(next());
    else if (a == "--verbose")
      verbose = true;
    else {
      std::fprintf(stderr, "usage: raft_soak [--seeds N] [--start S] [--steps K] [--verbose]\n");
      return 2;
    }
  }
  leasehold::raft::sim::InstallSeedReporter();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t failures = 0, reads = 0, crashes = 0, snaps = 0, elections = 0;
  for (uint64_t seed = start; seed < start + seeds; ++seed) {
    leasehold::raft::sim::SimOptions opt;
    opt.seed = seed;
    if (steps > 0) opt.chaos_steps = steps;
    auto r = RunSimulation(opt);
    reads += r.reads_checked;
    crashes += r.crashes;
    snaps += r.snapshots_installed;
    elections += r.elections;
    if (verbose || !r.ok) {
      std::printf("seed %llu nodes=%d ok=%d committed=%llu elections=%llu reads=%llu %s\n",
                  static_cast<unsigned long long>(seed), r.nodes, r.ok,
                  static_cast<unsigned long long>(r.committed),
                  static_cast<unsigned long long>(r.elections),
                  static_cast<unsigned long long>(r.reads_checked), r.failure.c_str());
    }
    if (!r.ok) ++failures;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%llu seeds from %llu: %llu failed; %llu elections, %llu reads checked, %llu crashes, "
      "%llu snapshots installed; %.1fs\n",
      static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(start),
      static_cast<unsigned long long>(failures), static_cast<unsigned long long>(elections),
      static_cast<unsigned long long>(reads), static_cast<unsigned long long>(crashes),
      static_cast<unsigned long long>(snaps), secs);
  return failures == 0 ? 0 : 1;
}
