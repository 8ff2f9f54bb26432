// raft_soak: runs the deterministic simulation for any range of seeds, in parallel processes (one
// per core unless --jobs says otherwise; process j takes every jobs-th seed from start + j). A
// failing seed prints itself (replay: RAFT_SIM_SEED=N raft_sim_test --gtest_filter='*Replay*');
// the totals end with seeds per second.
// Usage: raft_soak [--seeds N] [--start S] [--steps K] [--jobs J] [--verbose]
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/raft/simulation.h"

namespace {

// What one process found; sent to the parent whole through a pipe.
struct Totals {
  uint64_t seeds = 0, failures = 0, elections = 0, reads = 0, crashes = 0, snapshots = 0;
  void Add(const Totals& o) {
    seeds += o.seeds;
    failures += o.failures;
    elections += o.elections;
    reads += o.reads;
    crashes += o.crashes;
    snapshots += o.snapshots;
  }
};

Totals RunStripe(uint64_t first, uint64_t end, uint64_t stride, int steps, bool verbose) {
  using leasehold::raft::sim::RunSimulation;
  Totals totals;
  for (uint64_t seed = first; seed < end; seed += stride) {
    leasehold::raft::sim::SimOptions opt;
    opt.seed = seed;
    if (steps > 0) opt.chaos_steps = steps;
    auto r = RunSimulation(opt);
    ++totals.seeds;
    totals.reads += r.reads_checked;
    totals.crashes += r.crashes;
    totals.snapshots += r.snapshots_installed;
    totals.elections += r.elections;
    if (verbose || !r.ok) {
      std::printf("seed %llu nodes=%d ok=%d committed=%llu elections=%llu reads=%llu %s\n",
                  static_cast<unsigned long long>(seed), r.nodes, r.ok,
                  static_cast<unsigned long long>(r.committed),
                  static_cast<unsigned long long>(r.elections),
                  static_cast<unsigned long long>(r.reads_checked), r.failure.c_str());
      std::fflush(stdout);
    }
    if (!r.ok) ++totals.failures;
  }
  return totals;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seeds = 100, start = 1;
  int steps = -1;
  long jobs = sysconf(_SC_NPROCESSORS_ONLN);
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
    else if (a == "--jobs")
      jobs = std::atol(next());
    else if (a == "--verbose")
      verbose = true;
    else {
      std::fprintf(stderr,
                   "usage: raft_soak [--seeds N] [--start S] [--steps K] [--jobs J] [--verbose]\n");
      return 2;
    }
  }
  if (jobs < 1) jobs = 1;
  leasehold::raft::sim::InstallSeedReporter();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::array<int, 2>> pipes(static_cast<size_t>(jobs));
  std::vector<pid_t> children;
  std::fflush(stdout);
  for (long j = 0; j < jobs; ++j) {
    if (pipe(pipes[j].data()) != 0) {
      std::perror("pipe");
      return 2;
    }
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      return 2;
    }
    if (pid == 0) {
      const Totals totals = RunStripe(start + static_cast<uint64_t>(j), start + seeds,
                                      static_cast<uint64_t>(jobs), steps, verbose);
      const ssize_t written = write(pipes[j][1], &totals, sizeof totals);
      _exit(written == static_cast<ssize_t>(sizeof totals) ? 0 : 3);
    }
    close(pipes[j][1]);
    children.push_back(pid);
  }
  Totals all;
  int broken = 0;  // processes that died (the seed reporter has named their seed)
  for (long j = 0; j < jobs; ++j) {
    Totals totals;
    if (read(pipes[j][0], &totals, sizeof totals) == static_cast<ssize_t>(sizeof totals)) {
      all.Add(totals);
    } else {
      ++broken;
    }
    close(pipes[j][0]);
    int status = 0;
    waitpid(children[j], &status, 0);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%llu seeds from %llu in %ld processes: %llu failed%s; %llu elections, %llu reads checked, "
      "%llu crashes, %llu snapshots installed; %.1fs, %.0f seeds/s\n",
      static_cast<unsigned long long>(all.seeds), static_cast<unsigned long long>(start), jobs,
      static_cast<unsigned long long>(all.failures),
      broken > 0 ? (", " + std::to_string(broken) + " processes aborted").c_str() : "",
      static_cast<unsigned long long>(all.elections), static_cast<unsigned long long>(all.reads),
      static_cast<unsigned long long>(all.crashes), static_cast<unsigned long long>(all.snapshots),
      secs, secs > 0 ? static_cast<double>(all.seeds) / secs : 0.0);
  return all.failures == 0 && broken == 0 ? 0 : 1;
}
