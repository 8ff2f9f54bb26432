// leasehold-faults: one fault-injection campaign against a cluster of real leasehold processes.
//
//   leasehold-faults --binary PATH [--nodes 3|5] [--time SECONDS] [--seed N]
//                    [--nemesis kill,powercut,pause,partition,loss,delay,blackhole|all] [--out DIR]
//                    [--serializable-reads] [--break-watch drop|reorder|progress]
//
// Starts the cluster (network namespaces), runs the workloads and the nemesis for --time seconds,
// heals, restarts every member one at a time, reads everything back, runs the checkers, prints the
// summary and writes the report to --out. The fault schedule and the clients' choices follow from
// --seed. --serializable-reads makes the register reads etcd's serializable ones, which may be
// stale: the checker must then find anomalies (how to see that it can); --break-watch has a watcher
// lose an event, reorder two or record a progress notification ahead of its events, which the watch
// checker must find. Exit status: 0 no anomaly,
// 1 anomalies, 2 usage, 77 namespaces unavailable (skipped).
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/faults/blob_workload.h"
#include "tests/faults/nemesis.h"
#include "tests/faults/netns_cluster.h"
#include "tests/faults/report.h"

namespace lf = leasehold::faults;

namespace {

struct Flags {
  std::string binary;
  std::string out = "fault-report";
  std::string nemesis = "kill,pause,partition,loss";
  int nodes = 3;
  double time_s = 60;
  uint64_t seed = 1;
  bool serializable_reads = false;
  lf::WorkloadOptions::WatchFault break_watch = lf::WorkloadOptions::WatchFault::kNone;
};

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "leasehold-faults: %s\nusage: leasehold-faults --binary PATH [--nodes N] [--time S] "
               "[--seed N] "
               "[--nemesis kinds|all] [--out DIR] [--serializable-reads] "
               "[--break-watch drop|reorder|progress]\n",
               why.c_str());
  return 2;
}

bool ParseWatchFault(const std::string& name, lf::WorkloadOptions::WatchFault* fault) {
  using F = lf::WorkloadOptions::WatchFault;
  if (name == "drop")
    *fault = F::kDrop;
  else if (name == "reorder")
    *fault = F::kReorder;
  else if (name == "progress")
    *fault = F::kProgress;
  else
    return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string value = i + 1 < argc ? argv[i + 1] : "";
    bool ok = true;
    if (arg == "--serializable-reads") {  // a flag without a value
      flags.serializable_reads = true;
      continue;
    }
    if (arg == "--binary")
      flags.binary = value;
    else if (arg == "--out")
      flags.out = value;
    else if (arg == "--nemesis")
      flags.nemesis = value;
    else if (arg == "--nodes")
      ok = absl::SimpleAtoi(value, &flags.nodes);
    else if (arg == "--time")
      ok = absl::SimpleAtod(value, &flags.time_s);
    else if (arg == "--seed")
      ok = absl::SimpleAtoi(value, &flags.seed);
    else if (arg == "--break-watch")
      ok = ParseWatchFault(value, &flags.break_watch);
    else
      return Usage("unknown flag " + arg);
    if (!ok) return Usage("bad value for " + arg);
    ++i;
  }
  if (flags.binary.empty()) return Usage("--binary is required");
  if (flags.nodes < 3 || flags.nodes % 2 == 0) return Usage("--nodes must be odd and at least 3");
  lf::NemesisOptions nemesis_options;
  nemesis_options.seed = flags.seed;
  if (flags.nemesis == "all") flags.nemesis = "kill,powercut,pause,partition,loss,delay,blackhole";
  nemesis_options.kinds.clear();
  for (const std::string& kind :
       std::vector<std::string>(absl::StrSplit(flags.nemesis, ',', absl::SkipEmpty()))) {
    if (!lf::Nemesis::Known(kind)) return Usage("unknown nemesis " + kind);
    nemesis_options.kinds.insert(kind);
  }
  if (nemesis_options.kinds.empty()) return Usage("--nemesis names no fault");

  lf::ClusterOptions cluster_options;
  cluster_options.nodes = flags.nodes;
  cluster_options.binary = flags.binary;
  cluster_options.work_dir = flags.out + "/cluster";
  cluster_options.power_cuts = nemesis_options.kinds.contains("powercut");
  cluster_options.delay_proxies = nemesis_options.kinds.contains("delay");
  cluster_options.seed = flags.seed;
  std::filesystem::remove_all(cluster_options.work_dir);
  // SIGINT / SIGTERM (a ctest timeout, ^C) are taken by a thread that stops the members and removes
  // the namespaces before exiting, instead of leaving them behind. Blocked before any thread
  // starts, so only that thread receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::atomic<lf::NetnsCluster*> live_cluster{nullptr};
  std::thread([&stop_signals, &live_cluster] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    std::fprintf(stderr, "leasehold-faults: signal %d: stopping the cluster\n", signal);
    if (lf::NetnsCluster* c = live_cluster.load()) c->Shutdown();
    std::_Exit(128 + signal);
  }).detach();
  auto cluster = lf::NetnsCluster::Create(cluster_options);
  if (!cluster.ok()) {
    std::printf("skipped: %s\n", std::string(cluster.status().message()).c_str());
    return cluster.status().code() == absl::StatusCode::kUnavailable ? 77 : 1;
  }
  live_cluster = cluster->get();
  std::vector<std::string> endpoints;
  for (int i = 0; i < flags.nodes; ++i) endpoints.push_back((*cluster)->ClientEndpoint(i));

  lf::CampaignClock clock;
  lf::Recorder recorder;
  lf::WorkloadOptions workload_options;
  workload_options.seed = flags.seed;
  workload_options.serializable_reads = flags.serializable_reads;
  workload_options.break_watch = flags.break_watch;
  workload_options.watch_workers = flags.nodes;  // one starting on each member
  nemesis_options.lease_ttl_s = workload_options.lease_ttl_s;
  lf::Workloads workloads(endpoints, workload_options, &clock, &recorder);
  std::vector<std::string> blob_endpoints;
  for (int i = 0; i < flags.nodes; ++i) blob_endpoints.push_back((*cluster)->BlobEndpoint(i));
  lf::BlobRecord blob_record;
  lf::BlobLeaseWorkload blobs(blob_endpoints, /*workers=*/3, flags.seed, &clock, &recorder,
                              &blob_record);
  lf::Nemesis nemesis(cluster->get(), &workloads, &recorder, &clock, nemesis_options);
  const std::string title =
      absl::StrCat(flags.nodes, " members, seed ", flags.seed, ", nemesis ",
                   absl::StrJoin(nemesis_options.kinds, ","), ", ", flags.time_s, " s");
  std::printf("campaign: %s\n", title.c_str());
  if (nemesis.AwaitLeader(30) < 0) {
    std::printf("the cluster elected no leader; see %s/m*.log\n", cluster_options.work_dir.c_str());
    return 1;
  }

  workloads.Start();
  blobs.Start();
  std::atomic<bool> stop{false};
  std::thread nemesis_thread([&] { nemesis.Run(stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(flags.time_s * 1000)));
  stop = true;
  nemesis_thread.join();  // heals everything on the way out
  std::vector<std::string> other;
  if (nemesis.AwaitLeader(30) < 0)
    other.push_back("no leader within 30 s after the last fault was healed");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  workloads.Stop();
  blobs.Stop();

  // Every member restarted from its own disk, one at a time; the data must survive all of them.
  for (int i = 0; i < flags.nodes; ++i) {
    (*cluster)->Kill(i);
    (void)(*cluster)->Start(i);
    if (nemesis.AwaitLeader(30) < 0)
      other.push_back(absl::StrCat("no leader within 30 s of restarting m", i + 1));
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  workloads.VerifyAcknowledged("after every member restarted");
  workloads.FinalRegisterReads();
  const std::vector<lf::AcceptedWrite> fenced_log = workloads.ReadFencedLog();
  std::map<std::string, std::string> final_state;
  const std::vector<lf::WatchedEvent> watch_history = workloads.ReadWatchHistory(&final_state);
  // Last: it compacts away the history everything above read.
  const lf::CompactionCheck compaction = lf::CheckCompaction(endpoints, watch_history);

  const auto check_start = std::chrono::steady_clock::now();
  lf::Verdicts verdicts;
  verdicts.title = title;
  {
    std::lock_guard lock(recorder.mu);
    verdicts.linearizability = lf::CheckRegisters(recorder.registers);
    verdicts.leases = lf::CheckLeases(recorder.leases, recorder.lease_observations, recorder.faults,
                                      /*election_ns=*/2 * cluster_options.election_ms * 1000000LL,
                                      /*expiry_bound_ns=*/3000000000LL);
    verdicts.fence = lf::CheckFencedRegister(recorder.fenced, fenced_log);
    std::lock_guard blob_lock(blob_record.mu);
    verdicts.blob = lf::CheckBlobLeases(blob_record.holdings, blob_record.writes);
    verdicts.watch = lf::CheckWatches(recorder.watches, watch_history, final_state);
    verdicts.compaction = compaction;
    for (std::string& a : recorder.anomalies) other.push_back(std::move(a));
    verdicts.other_anomalies = std::move(other);
    verdicts.operations = static_cast<int64_t>(
        recorder.registers.size() + recorder.set_acked.size() + recorder.leases.size() +
        recorder.fenced.size() + blob_record.writes.size() + blob_record.holdings.size());
  }
  verdicts.faults = nemesis.faults_injected();
  verdicts.check_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
  lf::WriteReport(flags.out, verdicts, recorder);
  std::printf("%s", lf::SummaryText(verdicts, recorder).c_str());
  std::printf("report: %s/report.html\n", flags.out.c_str());
  return verdicts.anomalies() == 0 ? 0 : 1;
}
