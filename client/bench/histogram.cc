#include "client/bench/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace leasehold::bench {

Histogram::Histogram() : counts_((kMaxPower + 1) << kSubBucketBits, 0) {}

int Histogram::BucketOf(int64_t micros) {
  uint64_t v = static_cast<uint64_t>(std::max<int64_t>(micros, 0));
  if (v < (1u << kSubBucketBits)) return static_cast<int>(v);
  int power = 63 - std::countl_zero(v);  // v in [2^power, 2^(power+1))
  power = std::min(power, kMaxPower + kSubBucketBits - 1);
  int shift = power - kSubBucketBits;
  int sub = static_cast<int>((v >> shift) & ((1u << kSubBucketBits) - 1));
  return ((shift + 1) << kSubBucketBits) + sub;
}

int64_t Histogram::UpperBoundOf(int bucket) {
  int shift = (bucket >> kSubBucketBits) - 1;
  int sub = bucket & ((1 << kSubBucketBits) - 1);
  if (shift < 0) return sub;
  return ((static_cast<int64_t>(sub) + (1 << kSubBucketBits) + 1) << shift) - 1;
}

void Histogram::Record(int64_t micros) {
  int bucket = std::min<int>(BucketOf(micros), static_cast<int>(counts_.size()) - 1);
  ++counts_[bucket];
  ++count_;
  sum_ += micros;
  max_ = std::max(max_, micros);
}

void Histogram::Merge(const Histogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

int64_t Histogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  const int64_t rank = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(p / 100.0 * static_cast<double>(count_))));
  int64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(UpperBoundOf(static_cast<int>(i)), max_);
  }
  return max_;
}

}  // namespace leasehold::bench
