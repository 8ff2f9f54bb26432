#include "server/member/auto_compactor.h"

#include "gtest/gtest.h"

namespace leasehold::server {
namespace {

TEST(ParseAutoCompactionTest, EtcdsReadingOfTheFlags) {
  auto hours = ParseAutoCompaction("periodic", "2");
  ASSERT_TRUE(hours.ok());
  EXPECT_EQ(hours->period, absl::Hours(2));
  auto minutes = ParseAutoCompaction("periodic", "30m");
  ASSERT_TRUE(minutes.ok());
  EXPECT_EQ(minutes->period, absl::Minutes(30));
  auto revisions = ParseAutoCompaction("revision", "1000");
  ASSERT_TRUE(revisions.ok());
  EXPECT_EQ(revisions->mode, AutoCompaction::Mode::kRevision);
  EXPECT_EQ(revisions->revisions, 1000);
  auto off = ParseAutoCompaction("periodic", "0");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->enabled());
  EXPECT_EQ(ParseAutoCompaction("hourly", "1").status().message(),
            "unknown auto-compaction-mode \"hourly\"");
  EXPECT_FALSE(ParseAutoCompaction("periodic", "soon").ok());
  EXPECT_FALSE(ParseAutoCompaction("periodic", "-5m").ok());
  EXPECT_FALSE(ParseAutoCompaction("revision", "5m").ok());
}

TEST(PeriodicScheduleTest, FirstAfterOnePeriodToTheRevisionThenEveryPeriod) {
  PeriodicSchedule schedule(absl::Minutes(10));
  EXPECT_EQ(schedule.step(), absl::Minutes(1));
  const absl::Time start = absl::FromUnixSeconds(1000000);
  // Revision 100 + minute at each minute.
  for (int m = 0; m < 10; ++m) {
    EXPECT_FALSE(schedule.Sample(start + absl::Minutes(m), 100 + m)) << m;
  }
  auto target = schedule.Sample(start + absl::Minutes(10), 110);
  ASSERT_TRUE(target);
  EXPECT_EQ(*target, 100);  // sampled ten minutes before
  schedule.Compacted(start + absl::Minutes(10));
  for (int m = 11; m < 20; ++m)
    EXPECT_FALSE(schedule.Sample(start + absl::Minutes(m), 100 + m)) << m;
  target = schedule.Sample(start + absl::Minutes(20), 120);
  ASSERT_TRUE(target);
  EXPECT_EQ(*target, 110);
}

TEST(PeriodicScheduleTest, AFailedCompactionIsAskedAgainAtTheNextStep) {
  PeriodicSchedule schedule(absl::Seconds(10));
  const absl::Time start = absl::FromUnixSeconds(1000000);
  for (int s = 0; s < 10; ++s) schedule.Sample(start + absl::Seconds(s), s);
  EXPECT_TRUE(schedule.Sample(start + absl::Seconds(10), 10));
  EXPECT_TRUE(schedule.Sample(start + absl::Seconds(11), 11));  // not Compacted: still due
}

TEST(PeriodicScheduleTest, LongPeriodsCompactHourlyKeepingThePeriod) {
  PeriodicSchedule schedule(absl::Hours(72));
  EXPECT_EQ(schedule.step(), absl::Minutes(6));
  const absl::Time start = absl::FromUnixSeconds(1000000);
  int64_t revision = 1;
  absl::Time now = start;
  std::optional<int64_t> target;
  for (; !target; now += schedule.step()) target = schedule.Sample(now, revision++);
  EXPECT_EQ(now - schedule.step() - start, absl::Hours(72));
  EXPECT_EQ(*target, 1);
  schedule.Compacted(now - schedule.step());
  int steps = 0;
  for (target.reset(); !target; now += schedule.step(), ++steps)
    target = schedule.Sample(now, revision++);
  EXPECT_EQ(steps, 10);                    // an hour later
  EXPECT_EQ(revision - 1 - *target, 720);  // what was current 72 hours before
}

TEST(PeriodicScheduleTest, ResetWaitsAWholePeriodAgain) {
  PeriodicSchedule schedule(absl::Seconds(10));
  const absl::Time start = absl::FromUnixSeconds(1000000);
  for (int s = 0; s < 10; ++s) schedule.Sample(start + absl::Seconds(s), s);
  schedule.Reset();  // stopped leading
  EXPECT_FALSE(schedule.Sample(start + absl::Seconds(20), 20));
  EXPECT_FALSE(schedule.Sample(start + absl::Seconds(29), 29));
  EXPECT_EQ(schedule.Sample(start + absl::Seconds(30), 30), 20);
}

TEST(PeriodicScheduleTest, ATinyPeriodStillStepsAMillisecond) {
  PeriodicSchedule schedule(absl::Nanoseconds(1));
  EXPECT_EQ(schedule.step(), absl::Milliseconds(1));
  const absl::Time start = absl::FromUnixSeconds(1000000);
  EXPECT_EQ(schedule.Sample(start, 5), std::nullopt);
  EXPECT_EQ(schedule.Sample(start + absl::Milliseconds(1), 6), 5);
}

TEST(RevisionScheduleTest, KeepsTheNewestRevisionsAndSkipsRepeats) {
  RevisionSchedule schedule(100);
  EXPECT_FALSE(schedule.Sample(100));
  EXPECT_EQ(schedule.Sample(150), 50);
  schedule.Compacted(50);
  EXPECT_FALSE(schedule.Sample(150));  // nothing written since
  EXPECT_EQ(schedule.Sample(151), 51);
}

}  // namespace
}  // namespace leasehold::server
