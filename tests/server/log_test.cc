#include "server/observability/log.h"

#include "gtest/gtest.h"

namespace leasehold::server {
namespace {

// Expected strings are what Go's time.Duration.String gives for the same values.
TEST(GoDurationTest, PrintsAsGoDoes) {
  EXPECT_EQ(GoDuration(absl::ZeroDuration()), "0s");
  EXPECT_EQ(GoDuration(absl::Nanoseconds(999)), "999ns");
  EXPECT_EQ(GoDuration(absl::Microseconds(1)), "1\u00b5s");
  EXPECT_EQ(GoDuration(absl::Nanoseconds(1500)), "1.5\u00b5s");
  EXPECT_EQ(GoDuration(absl::Nanoseconds(250'001)), "250.001\u00b5s");
  EXPECT_EQ(GoDuration(absl::Milliseconds(100)), "100ms");
  EXPECT_EQ(GoDuration(absl::Nanoseconds(1'234'567)), "1.234567ms");
  EXPECT_EQ(GoDuration(absl::Seconds(1)), "1s");
  EXPECT_EQ(GoDuration(absl::Milliseconds(2500)), "2.5s");
  EXPECT_EQ(GoDuration(absl::Seconds(90)), "1m30s");
  EXPECT_EQ(GoDuration(absl::Minutes(5)), "5m0s");
  EXPECT_EQ(GoDuration(absl::Hours(1)), "1h0m0s");
  EXPECT_EQ(GoDuration(absl::Hours(25) + absl::Seconds(1) + absl::Nanoseconds(1)),
            "25h0m1.000000001s");
  EXPECT_EQ(GoDuration(-absl::Milliseconds(3)), "-3ms");
}

}  // namespace
}  // namespace leasehold::server
