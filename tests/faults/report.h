// A campaign's report folder: summary.txt (the verdicts), history.txt (every register operation,
// lease, fenced write and fault window), and report.html (the summary and a plot of latency over
// time with the fault windows shaded, as inline SVG: opens in any browser, no scripts).
#pragma once

#include <string>
#include <vector>

#include "tests/faults/blob_workload.h"
#include "tests/faults/compaction_check.h"
#include "tests/faults/linearizability.h"
#include "tests/faults/safety_checkers.h"
#include "tests/faults/workloads.h"

namespace leasehold::faults {

struct Verdicts {
  std::string title;  // nodes, seed, nemeses, duration
  LinearizabilityResult linearizability;
  LeaseCheck leases;
  FenceCheck fence;
  BlobCheck blob;
  WatchCheck watch;
  CompactionCheck compaction;
  std::vector<std::string> other_anomalies;  // acknowledged writes, leaders, final reads
  int64_t operations = 0;
  int64_t faults = 0;
  double check_seconds = 0;
  int64_t anomalies() const {
    return (linearizability.linearizable ? 0 : 1) +
           static_cast<int64_t>(leases.anomalies.size() + fence.anomalies.size() +
                                blob.anomalies.size() + watch.anomalies.size() +
                                compaction.anomalies.size() + other_anomalies.size());
  }
};

// The summary as text (also printed by the driver).
std::string SummaryText(const Verdicts& verdicts, const Recorder& recorder);
// Writes summary.txt, history.txt and report.html into `dir` (created if needed).
void WriteReport(const std::string& dir, const Verdicts& verdicts, const Recorder& recorder);

}  // namespace leasehold::faults
