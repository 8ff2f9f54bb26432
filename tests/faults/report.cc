#include "tests/faults/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace leasehold::faults {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

const char* Color(const std::string& kind) {
  static const std::map<std::string, const char*> colors = {
      {"read", "#1f77b4"}, {"write", "#2ca02c"},  {"cas", "#9467bd"},
      {"set", "#8c564b"},  {"lease", "#e377c2"},  {"keepalive", "#17becf"},
      {"lock", "#bcbd22"}, {"fenced", "#ff7f0e"}, {"blob", "#aec7e8"}};
  auto it = colors.find(kind);
  return it == colors.end() ? "#7f7f7f" : it->second;
}

const char* FaultColor(const std::string& kind) {
  if (kind == "kill" || kind == "powercut") return "#d62728";
  if (kind == "pause") return "#ff9896";
  if (kind == "partition" || kind == "blackhole") return "#c5b0d5";
  if (kind == "delay") return "#dbdb8d";
  return "#c49c94";
}

// Latency (log scale, 1 ms to 10 s) against time, fault windows shaded behind.
std::string Plot(const Recorder& r) {
  const double width = 1200, height = 420, left = 60, bottom = 30, top = 10;
  int64_t end_ns = 1;
  for (const auto& s : r.samples) end_ns = std::max(end_ns, s.at_ns + s.latency_ns);
  for (const auto& f : r.faults) end_ns = std::max(end_ns, f.end_ns);
  auto x = [&](int64_t ns) {
    return left + (width - left - 10) * static_cast<double>(ns) / static_cast<double>(end_ns);
  };
  auto y = [&](int64_t latency_ns) {
    const double ms = std::clamp(static_cast<double>(latency_ns) / 1e6, 0.1, 10000.0);
    return top + (height - top - bottom) * (1 - (std::log10(ms) + 1) / 5);
  };
  std::string svg = absl::StrFormat(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">)",
      width, height);
  for (const auto& f : r.faults) {
    absl::StrAppendFormat(
        &svg,
        R"(<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" opacity="0.35"><title>%s %s</title></rect>)",
        x(f.start_ns), top, std::max(1.0, x(f.end_ns) - x(f.start_ns)), height - top - bottom,
        FaultColor(f.kind), Escape(f.kind), Escape(f.targets));
  }
  for (int decade = -1; decade <= 4; ++decade) {
    const double yy = y(static_cast<int64_t>(std::pow(10.0, decade) * 1e6));
    absl::StrAppendFormat(
        &svg,
        R"(<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="2" y="%.1f">%s</text>)",
        left, width - 10, yy, yy, yy + 4,
        decade < 0   ? "0.1 ms"
        : decade < 3 ? absl::StrCat(std::pow(10, decade), " ms")
                     : absl::StrCat(std::pow(10, decade - 3), " s"));
  }
  const int64_t seconds = end_ns / 1000000000;
  const int64_t step = std::max<int64_t>(1, seconds / 12);
  for (int64_t s = 0; s <= seconds; s += step) {
    absl::StrAppendFormat(&svg, R"(<text x="%.1f" y="%.0f">%d s</text>)", x(s * 1000000000),
                          height - 10, s);
  }
  // At most ~40,000 points: every k-th sample, failures always.
  const size_t k = std::max<size_t>(1, r.samples.size() / 40000);
  for (size_t i = 0; i < r.samples.size(); ++i) {
    const auto& s = r.samples[i];
    if (s.ok && i % k != 0) continue;
    absl::StrAppendFormat(&svg, R"(<circle cx="%.1f" cy="%.1f" r="%s" fill="%s"/>)", x(s.at_ns),
                          y(s.latency_ns), s.ok ? "1.2" : "2.5", s.ok ? Color(s.kind) : "#000");
  }
  svg += "</svg>";
  return svg;
}

}  // namespace

std::string SummaryText(const Verdicts& v, const Recorder& r) {
  std::string out = absl::StrCat(v.title, "\n");
  std::map<std::string, int> fault_counts;
  for (const auto& f : r.faults) ++fault_counts[f.kind];
  std::string faults;
  for (const auto& [kind, count] : fault_counts)
    absl::StrAppend(&faults, faults.empty() ? "" : ", ", kind, " ", count);
  absl::StrAppendFormat(
      &out, "operations: %d (registers %d, set writes %d, leases %d, fenced writes %d)\n",
      v.operations, r.registers.size(), r.set_acked.size(), r.leases.size(), r.fenced.size());
  absl::StrAppendFormat(&out, "faults injected: %d (%s)\n", v.faults, faults);
  absl::StrAppendFormat(
      &out, "linearizability: %s (%d keys, %d operations after pruning, %d configurations)\n",
      v.linearizability.linearizable ? "valid" : "INVALID", v.linearizability.keys,
      v.linearizability.ops_checked, v.linearizability.configurations);
  absl::StrAppendFormat(
      &out, "acknowledged writes: %d checks after faults and restarts, %d writes acknowledged\n",
      r.set_checks, r.set_acked.size());
  absl::StrAppendFormat(&out,
                        "leases: %d leases, %d observations, %d revocations or expiries checked\n",
                        v.leases.leases, v.leases.observations, v.leases.revocations_checked);
  absl::StrAppendFormat(
      &out,
      "fenced lock: %d accepted writes from %d holders, %d stale writes after pauses refused\n",
      v.fence.accepted, v.fence.holders, v.fence.stale_refused);
  absl::StrAppendFormat(
      &out,
      "blob leases: %d holdings, %d writes accepted, %d writes with a run-out lease refused\n",
      v.blob.holdings, v.blob.writes_accepted, v.blob.stale_refused);
  absl::StrAppendFormat(&out,
                        "watches: %d events and %d progress notifications received over %d "
                        "streams, checked against a history of %d events\n",
                        v.watch.events, v.watch.progress, v.watch.streams, v.watch.history_events);
  absl::StrAppendFormat(&out,
                        "compaction: at revision %d, %d members refused what it removed and served "
                        "what it kept\n",
                        v.compaction.revision, v.compaction.members);
  absl::StrAppendFormat(&out, "checkers took %.2f s\n", v.check_seconds);
  absl::StrAppendFormat(&out, "anomalies: %d\n", v.anomalies());
  if (!v.linearizability.linearizable) {
    absl::StrAppend(&out, "  not linearizable on key ", v.linearizability.failing_key,
                    "; minimal failing sub-history:\n");
    for (const RegisterOp& op : v.linearizability.failing_ops)
      absl::StrAppend(&out, "    ", Describe(op), "\n");
  }
  for (const auto* list : {&v.leases.anomalies, &v.fence.anomalies, &v.blob.anomalies,
                           &v.watch.anomalies, &v.compaction.anomalies, &v.other_anomalies}) {
    int shown = 0;
    for (const std::string& a : *list) {
      if (++shown > 20) {
        absl::StrAppend(&out, "  ... and ", list->size() - 20, " more\n");
        break;
      }
      absl::StrAppend(&out, "  ", a, "\n");
    }
  }
  return out;
}

void WriteReport(const std::string& dir, const Verdicts& v, const Recorder& r) {
  std::filesystem::create_directories(dir);
  const std::string summary = SummaryText(v, r);
  std::ofstream(dir + "/summary.txt") << summary;
  {
    std::ofstream h(dir + "/history.txt");
    for (const auto& f : r.faults) {
      h << absl::StrFormat("fault %s %s from %.3f s to %.3f s\n", f.kind, f.targets,
                           f.start_ns / 1e9, f.end_ns / 1e9);
    }
    for (const auto& op : r.registers) h << Describe(op) << "\n";
    for (const auto& l : r.leases) {
      h << absl::StrFormat(
          "lease %d ttl %d granted %.3f put %.3f renewals %d gone %.3f revoked %.3f abandoned "
          "%.3f\n",
          l.id, l.ttl_s, l.granted_sent_ns / 1e9, l.put_acked_ns / 1e9, l.renewals.size(),
          l.gone_seen_ns / 1e9, l.revoke_acked_ns / 1e9, l.abandoned_ns / 1e9);
    }
    for (const auto& w : r.fenced) {
      const char* outcome = w.outcome == FencedWrite::Outcome::kAccepted  ? "accepted"
                            : w.outcome == FencedWrite::Outcome::kRefused ? "refused"
                                                                          : "unknown";
      h << absl::StrFormat("fenced client %d token %d seq %d %s%s [%.3f s, %.3f s]\n", w.client,
                           w.token, w.seq, outcome, w.after_pause ? " after pause" : "",
                           w.call_ns / 1e9, w.return_ns / 1e9);
    }
  }
  std::ofstream html(dir + "/report.html");
  html << "<!doctype html><meta charset=utf-8><title>" << Escape(v.title) << "</title>"
       << "<body style='font-family:sans-serif'><h1>" << Escape(v.title) << "</h1><pre>"
       << Escape(summary) << "</pre>"
       << "<h2>Latency over time</h2><p>Each dot is an operation (black: failed or timed out). "
          "Shaded: "
       << "<span style='background:#d62728;opacity:.5'>kill</span> "
       << "<span style='background:#ff9896'>pause</span> <span "
          "style='background:#c5b0d5'>partition</span> "
       << "<span style='background:#c49c94'>loss</span>. Colours: read blue, write green, cas "
          "purple, set brown, "
          "lease pink, keep-alive cyan, lock olive, fenced write orange, blob light blue.</p>"
       << Plot(r) << "<h2>Faults</h2><ul>";
  for (const auto& f : r.faults) {
    html << absl::StrFormat("<li>%.1f–%.1f s: %s %s</li>", f.start_ns / 1e9, f.end_ns / 1e9,
                            Escape(f.kind), Escape(f.targets));
  }
  html << "</ul></body>\n";
}

}  // namespace leasehold::faults
