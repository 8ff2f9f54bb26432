#include "client/bench/report.h"

#include <cstdio>

namespace leasehold::bench {
namespace {

std::string Ms(int64_t micros) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", static_cast<double>(micros) / 1000.0);
  return buf;
}

}  // namespace

std::string FormatText(const Report& r) {
  const LoadResult& l = r.load;
  char buf[512];
  std::string out = "workload   " + r.workload + "\n";
  std::snprintf(buf, sizeof buf, "ops        %lld in %.2f s = %.1f ops/s\n",
                static_cast<long long>(l.ops), l.seconds, l.ops_per_second());
  out += buf;
  out += "errors     " + std::to_string(l.error_count());
  for (const auto& [code, count] : l.errors) out += "  " + code + ":" + std::to_string(count);
  out += "\nlatency    p50 " + Ms(l.latency.Percentile(50)) + "  p90 " +
         Ms(l.latency.Percentile(90)) + "  p99 " + Ms(l.latency.Percentile(99)) + "  p99.9 " +
         Ms(l.latency.Percentile(99.9)) + "  max " + Ms(l.latency.max()) + "\n";
  for (const auto& [name, value] : r.extras) {
    std::snprintf(buf, sizeof buf, "%-10s %g\n", name.c_str(), value);
    out += buf;
  }
  return out;
}

std::string FormatJson(const Report& r) {
  const LoadResult& l = r.load;
  char buf[512];
  std::string out = "{\"workload\":\"" + r.workload + "\"";
  std::snprintf(buf, sizeof buf, ",\"ops\":%lld,\"seconds\":%.3f,\"ops_per_sec\":%.1f",
                static_cast<long long>(l.ops), l.seconds, l.ops_per_second());
  out += buf;
  out += ",\"errors\":{";
  bool first = true;
  for (const auto& [code, count] : l.errors) {
    out += (first ? "\"" : ",\"") + code + "\":" + std::to_string(count);
    first = false;
  }
  std::snprintf(
      buf, sizeof buf,
      "},\"latency_us\":{\"p50\":%lld,\"p90\":%lld,\"p99\":%lld,\"p999\":%lld,\"max\":%lld}",
      static_cast<long long>(l.latency.Percentile(50)),
      static_cast<long long>(l.latency.Percentile(90)),
      static_cast<long long>(l.latency.Percentile(99)),
      static_cast<long long>(l.latency.Percentile(99.9)), static_cast<long long>(l.latency.max()));
  out += buf;
  for (const auto& [name, value] : r.extras) {
    std::snprintf(buf, sizeof buf, ",\"%s\":%g", name.c_str(), value);
    out += buf;
  }
  return out + "}\n";
}

}  // namespace leasehold::bench
