// Process-wide metrics, rendered in the Prometheus text exposition format (0.0.4) on /metrics of
// --listen-metrics-urls, next to etcd's /health. Counters and histograms are updated where events
// happen (lock-free); gauges are read from the member at scrape time. Names follow etcd's where
// etcd has the metric; ours start with leasehold_. (prometheus-cpp, the obvious library, is not in
// Debian 12's archive, so the few types needed are here.)
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace leasehold::server {

class Member;

class Metrics {
 public:
  // A cumulative histogram with fixed upper bounds (seconds).
  class Histogram {
   public:
    static constexpr std::array<double, 14> kBounds = {0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.004, 0.008,
                                                       0.016,  0.032,  0.064,  0.128, 0.256, 0.512, 1.024};
    void Observe(double seconds);
    void Render(const std::string& name, const std::string& help, std::string* out) const;

   private:
    std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};  // last: +Inf
    std::atomic<uint64_t> sum_ns_{0};
  };

  static Metrics& Get();

  std::atomic<uint64_t> leader_changes{0};       // etcd_server_leader_changes_seen_total
  std::atomic<uint64_t> expired_lease_revokes{0};  // leasehold_lease_expired_revokes_total
  Histogram wal_fsync;                           // etcd_disk_wal_fsync_duration_seconds
  // Blob adapter answers by HTTP status (100..599).
  void CountBlobAnswer(int status);

  // The whole exposition, with `member`'s gauges read now.
  std::string Render(Member& member) const;

 private:
  std::array<std::atomic<uint64_t>, 500> blob_answers_{};
};

}  // namespace leasehold::server
