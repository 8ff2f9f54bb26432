#include "tests/faults/nemesis.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace leasehold::faults {
namespace {

void SleepUnlessStopped(int64_t ms, const std::atomic<bool>& stop) {
  for (int64_t slept = 0; slept < ms && !stop.load(); slept += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(50, ms - slept)));
  }
}

std::string Names(const std::vector<int>& members) {
  std::vector<std::string> names;
  for (int m : members) names.push_back(absl::StrCat("m", m + 1));
  return absl::StrJoin(names, ",");
}

}  // namespace

bool Nemesis::Known(const std::string& kind) {
  return kind == "kill" || kind == "powercut" || kind == "pause" || kind == "partition" ||
         kind == "loss" || kind == "blackhole" || kind == "delay";
}

Nemesis::Nemesis(NetnsCluster* cluster, Workloads* workloads, Recorder* recorder,
                 const CampaignClock* clock, NemesisOptions options)
    : cluster_(cluster),
      workloads_(workloads),
      recorder_(recorder),
      clock_(clock),
      options_(std::move(options)),
      rng_(options_.seed) {}

std::vector<int> Nemesis::Victims(bool prefer_leader) {
  const int n = cluster_->size();
  std::vector<int> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  std::shuffle(all.begin(), all.end(), rng_);
  const int count = 1 + static_cast<int>(rng_() % ((n - 1) / 2));  // a minority
  std::vector<int> victims(all.begin(), all.begin() + count);
  if (prefer_leader) {
    const int leader = workloads_->Leader(all);
    if (leader >= 0 && std::find(victims.begin(), victims.end(), leader) == victims.end())
      victims[0] = leader;
  }
  return victims;
}

std::string Nemesis::Inject(const std::string& kind) {
  const int n = cluster_->size();
  if (kind == "kill") {
    down_ = Victims(rng_() % 2 == 0);
    for (int v : down_) cluster_->Kill(v);
    return Names(down_);
  }
  if (kind == "powercut") {
    down_ = Victims(rng_() % 2 == 0);
    std::string outcomes;
    for (int v : down_) {
      const int64_t lost = cluster_->PowerCut(v);
      outcomes += absl::StrCat(outcomes.empty() ? " (" : ", ", "m", v + 1,
                               lost < 0 ? " killed instead: no write came"
                                        : absl::StrCat(" lost ", lost, " unsynced B"));
    }
    return Names(down_) + outcomes + ")";
  }
  if (kind == "pause") {
    down_ = Victims(rng_() % 2 == 0);
    for (int v : down_) cluster_->Pause(v);
    return Names(down_);
  }
  if (kind == "blackhole") {
    down_ = {Victims(rng_() % 2 == 0)[0]};
    const int victim = down_[0];
    std::vector<int> rest;
    for (int i = 0; i < n; ++i) {
      if (i != victim) rest.push_back(i);
    }
    blackhole_from_index_ = workloads_->RaftIndex(rest);
    blackhole_snapshots_before_ = cluster_->SnapshotsInstalled(victim);
    for (int other : rest) (void)cluster_->Cut(victim, other);
    return Names(down_);
  }
  if (kind == "delay") {
    cluster_->SetPeerDelay(75, 50);
    return "75±50 ms on every peer link";
  }
  if (kind == "loss") {
    const double p = 0.2 + 0.1 * static_cast<double>(rng_() % 4);
    (void)cluster_->Lossy(p);
    return absl::StrCat(static_cast<int>(p * 100), "% of peer packets");
  }
  // partition
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng_);
  const int shape = static_cast<int>(rng_() % (n >= 5 ? 4 : 2));
  if (shape == 0 || shape == 1) {
    // Majority / minority; shape 1 puts the leader alone.
    std::vector<int> minority;
    if (shape == 1) {
      const int leader = workloads_->Leader(order);
      minority.push_back(leader >= 0 ? leader : order[0]);
    } else {
      minority.assign(order.begin(), order.begin() + (n - 1) / 2);
    }
    for (int a : minority) {
      for (int b = 0; b < n; ++b) {
        if (std::find(minority.begin(), minority.end(), b) == minority.end())
          (void)cluster_->Cut(a, b);
      }
    }
    return absl::StrCat(shape == 1 ? "leader " : "", Names(minority), " | rest");
  }
  if (shape == 2) {
    // Bridge: two halves that only one member reaches both of.
    const int bridge = order[0];
    std::vector<int> left(order.begin() + 1, order.begin() + 1 + (n - 1) / 2),
        right(order.begin() + 1 + (n - 1) / 2, order.end());
    for (int a : left) {
      for (int b : right) (void)cluster_->Cut(a, b);
    }
    return absl::StrCat("bridge m", bridge + 1, " between ", Names(left), " and ", Names(right));
  }
  // Ring: each member reaches only its two neighbours.
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const int d = std::abs(i - j);
      if (d != 1 && d != n - 1) (void)cluster_->Cut(order[i], order[j]);
    }
  }
  return absl::StrCat("ring ", Names(order));
}

void Nemesis::Heal(const std::string& kind) {
  if (kind == "kill" || kind == "powercut") {
    for (int v : down_) (void)cluster_->Start(v);
  } else if (kind == "pause") {
    for (int v : down_) cluster_->Resume(v);
  } else {
    (void)cluster_->HealNetwork();
  }
  down_.clear();
}

void Nemesis::HoldBlackhole(const std::atomic<bool>& stop) {
  std::vector<int> rest;
  for (int i = 0; i < cluster_->size(); ++i) {
    if (i != down_[0]) rest.push_back(i);
  }
  const int64_t until = clock_->Now() + 60'000'000'000LL;
  SleepUnlessStopped(3000, stop);
  while (!stop && clock_->Now() < until &&
         workloads_->RaftIndex(rest) < blackhole_from_index_ + options_.compacted_past_entries) {
    SleepUnlessStopped(500, stop);
  }
}

std::string Nemesis::BlackholeOutcome(int victim) {
  // The snapshot comes once the leader sees the member again.
  for (int waited_ms = 0; waited_ms < 15000; waited_ms += 250) {
    if (cluster_->SnapshotsInstalled(victim) > blackhole_snapshots_before_)
      return " (caught up from a snapshot)";
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return " (no snapshot installed)";
}

void Nemesis::HealAll() {
  (void)cluster_->HealNetwork();
  for (int i = 0; i < cluster_->size(); ++i) {
    cluster_->Resume(i);
    if (!cluster_->running(i)) (void)cluster_->Start(i);
  }
  down_.clear();
}

int Nemesis::AwaitLeader(double seconds) {
  std::vector<int> all(cluster_->size());
  for (int i = 0; i < cluster_->size(); ++i) all[i] = i;
  const int64_t until = clock_->Now() + static_cast<int64_t>(seconds * 1e9);
  while (clock_->Now() < until) {
    if (int leader = workloads_->Leader(all); leader >= 0) return leader;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return -1;
}

void Nemesis::Run(const std::atomic<bool>& stop) {
  std::vector<std::string> kinds(options_.kinds.begin(), options_.kinds.end());
  while (!stop) {
    SleepUnlessStopped(2000 + static_cast<int64_t>(rng_() % 3000), stop);
    if (stop) break;
    const std::string kind = kinds[rng_() % kinds.size()];
    FaultWindow window;
    window.kind = kind;
    window.start_ns = clock_->Now();
    window.targets = Inject(kind);
    ++injected_;
    // Pauses outlast a lease's TTL and an election timeout: the seed's stalled-holder case.
    const int64_t hold_ms =
        kind == "pause" ? options_.lease_ttl_s * 1000 + 1000 + static_cast<int64_t>(rng_() % 3000)
                        : 3000 + static_cast<int64_t>(rng_() % 5000);
    if (kind == "blackhole") {
      HoldBlackhole(stop);
    } else {
      SleepUnlessStopped(hold_ms, stop);
    }
    const int cut_off = kind == "blackhole" ? down_[0] : -1;
    Heal(kind);
    if (cut_off >= 0) window.targets += BlackholeOutcome(cut_off);
    window.end_ns = clock_->Now();
    std::printf("[%7.1f s] %-9s %s (%.1f s)\n", window.start_ns / 1e9, kind.c_str(),
                window.targets.c_str(), (window.end_ns - window.start_ns) / 1e9);
    std::fflush(stdout);
    {
      std::lock_guard lock(recorder_->mu);
      recorder_->faults.push_back(window);
    }
    if (AwaitLeader(20) < 0) {
      std::lock_guard lock(recorder_->mu);
      recorder_->anomalies.push_back(
          absl::StrCat("no leader within 20 s of healing ", kind, " ", window.targets));
      continue;
    }
    workloads_->VerifyAcknowledged(absl::StrCat("after ", kind, " ", window.targets));
  }
  HealAll();
}

}  // namespace leasehold::faults
