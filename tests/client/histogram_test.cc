// The benchmark's latency histogram: percentiles within the bucket precision of exact ones.
#include "client/bench/histogram.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/test_seed.h"

namespace leasehold::bench {
namespace {

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (int v = 1; v <= 50; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(50), 25);
  EXPECT_EQ(h.Percentile(100), 50);
  EXPECT_EQ(h.max(), 50);
  EXPECT_EQ(h.count(), 50);
}

TEST(HistogramTest, PercentilesWithinBucketPrecision) {
  const uint32_t seed = leasehold::testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> latency(8.0, 1.5);  // µs, a long tail like real latencies
  Histogram h;
  std::vector<int64_t> exact;
  for (int i = 0; i < 100000; ++i) {
    int64_t v = static_cast<int64_t>(latency(rng));
    h.Record(v);
    exact.push_back(v);
  }
  std::sort(exact.begin(), exact.end());
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    int64_t truth = exact[static_cast<size_t>(std::ceil(p / 100 * exact.size())) - 1];
    int64_t got = h.Percentile(p);
    EXPECT_GE(got, truth) << "p" << p;
    EXPECT_LE(static_cast<double>(got), static_cast<double>(truth) * 1.016 + 1) << "p" << p;
  }
  EXPECT_EQ(h.Percentile(100), exact.back());
}

TEST(HistogramTest, MergeAddsCounts) {
  Histogram a, b;
  a.Record(10);
  b.Record(1000);
  b.Record(2000);
  a.Merge(b);
  EXPECT_EQ(a.count(), 3);
  EXPECT_EQ(a.max(), 2000);
  EXPECT_EQ(a.Percentile(34), 1007);  // the upper bound of the bucket holding 1000 (8 wide there)
}

}  // namespace
}  // namespace leasehold::bench
