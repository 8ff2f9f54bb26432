// A latency histogram in the HDR style: log-linear buckets (64 per power of two, so any recorded
// value is within 1.6% of its bucket's bound) from 1 µs to about 1 hour, constant memory,
// mergeable. Not thread-safe; ShardedHistogram spreads concurrent recorders over independent
// shards.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

namespace leasehold::bench {

class Histogram {
 public:
  Histogram();
  void Record(int64_t micros);
  void Merge(const Histogram& other);
  // p in [0, 100]; the upper bound of the bucket holding that quantile (µs). 0 when empty.
  int64_t Percentile(double p) const;
  int64_t max() const { return max_; }
  int64_t count() const { return count_; }
  double mean() const {
    return count_ == 0 ? 0 : static_cast<double>(sum_) / static_cast<double>(count_);
  }

 private:
  static constexpr int kSubBucketBits = 6;
  static constexpr int kMaxPower = 32;
  static int BucketOf(int64_t micros);
  static int64_t UpperBoundOf(int bucket);
  std::vector<int64_t> counts_;
  int64_t count_ = 0;
  int64_t sum_ = 0;
  int64_t max_ = 0;
};

class ShardedHistogram {
 public:
  void Record(size_t shard, int64_t micros) {
    Shard& s = shards_[shard % shards_.size()];
    std::lock_guard<std::mutex> lock(s.mu);
    s.histogram.Record(micros);
  }
  Histogram Merged() {
    Histogram all;
    for (Shard& s : shards_) {
      std::lock_guard<std::mutex> lock(s.mu);
      all.Merge(s.histogram);
    }
    return all;
  }

 private:
  struct Shard {
    std::mutex mu;
    Histogram histogram;
  };
  std::array<Shard, 64> shards_;
};

}  // namespace leasehold::bench
