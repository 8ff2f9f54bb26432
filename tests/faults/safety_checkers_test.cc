#include "tests/faults/safety_checkers.h"

#include "gtest/gtest.h"

namespace leasehold::faults {
namespace {

constexpr int64_t kS = 1000000000;

LeaseLife Lease(int64_t id) {
  LeaseLife l;
  l.id = id;
  l.ttl_s = 3;
  l.granted_sent_ns = 0;
  l.put_acked_ns = kS / 10;
  return l;
}

LeaseObservation Seen(int64_t call, int64_t ret, std::vector<int64_t> present) {
  return {call, ret, std::move(present)};
}

TEST(LeaseChecker, KeyGoneBeforeAnAcknowledgedRenewalRanOutIsAnAnomaly) {
  LeaseLife l = Lease(7);
  l.renewals = {{2 * kS, 3}};  // promised until 5 s
  l.abandoned_ns = 2 * kS;
  EXPECT_EQ(CheckLeases({l}, {Seen(4 * kS, 4 * kS + 1, {})}, {}, kS, kS).anomalies.size(), 1u);
  EXPECT_TRUE(CheckLeases({l}, {Seen(5 * kS, 5 * kS + 1, {})}, {}, kS, kS).anomalies.empty());
}

TEST(LeaseChecker, KeyGoneAfterTheClientSentARevokeIsNot) {
  LeaseLife l = Lease(7);
  l.renewals = {{2 * kS, 3}};
  l.revoke_sent_ns = 3 * kS;
  EXPECT_TRUE(CheckLeases({l}, {Seen(3 * kS, 4 * kS, {})}, {}, kS, kS).anomalies.empty());
  EXPECT_EQ(CheckLeases({l}, {Seen(2 * kS, 2 * kS + 1, {})}, {}, kS, kS).anomalies.size(), 1u);
}

TEST(LeaseChecker, KeySeenAfterAcknowledgedRevokeIsAnAnomaly) {
  LeaseLife l = Lease(7);
  l.revoke_acked_ns = kS;
  EXPECT_EQ(CheckLeases({l}, {Seen(2 * kS, 2 * kS + 1, {7})}, {}, kS, kS).anomalies.size(), 1u);
  // A read that began before the revoke was acknowledged may still see it.
  EXPECT_TRUE(CheckLeases({l}, {Seen(kS - 1, kS + 5, {7})}, {}, kS, kS).anomalies.empty());
}

TEST(LeaseChecker, AbandonedLeaseMustGoWithinItsBoundUnlessAFaultHeldItUp) {
  LeaseLife l = Lease(7);
  l.abandoned_ns = kS / 5;  // last renewal: the grant at 0, TTL 3 s, bound 1 s -> gone by 4 s
  const auto late = Seen(5 * kS, 5 * kS + 1, {7});
  auto check = CheckLeases({l}, {late}, {}, kS, kS);
  EXPECT_EQ(check.anomalies.size(), 1u);
  EXPECT_EQ(check.revocations_checked, 1);
  // A fault until 3 s moves the deadline to 3 + 1 (election) + 3 (TTL) + 1 = 8 s.
  FaultWindow f{"partition", "m1 | rest", 1 * kS, 3 * kS};
  EXPECT_TRUE(CheckLeases({l}, {late}, {f}, kS, kS).anomalies.empty());
  EXPECT_EQ(CheckLeases({l}, {Seen(9 * kS, 9 * kS + 1, {7})}, {f}, kS, kS).anomalies.size(), 1u);
}

TEST(FenceChecker, LowerTokenAfterHigherIsAnAnomaly) {
  std::vector<AcceptedWrite> log = {{10, 5, 0, 0}, {11, 5, 0, 1}, {12, 9, 1, 2}, {13, 7, 2, 3}};
  auto check = CheckFencedRegister({}, log);
  EXPECT_EQ(check.anomalies.size(), 1u);
  EXPECT_EQ(check.holders, 3);
}

TEST(FenceChecker, AcknowledgedWriteMissingAndRefusedWritePresentAreAnomalies) {
  FencedWrite accepted{1, 5, 0, 0, 1, FencedWrite::Outcome::kAccepted, false};
  FencedWrite refused{2, 3, 1, 2, 3, FencedWrite::Outcome::kRefused, true};
  EXPECT_EQ(CheckFencedRegister({accepted, refused}, {}).anomalies.size(), 1u);
  EXPECT_EQ(
      CheckFencedRegister({accepted, refused}, {{10, 5, 1, 0}, {11, 3, 2, 1}}).anomalies.size(),
      2u);
  auto fine = CheckFencedRegister({accepted, refused}, {{10, 5, 1, 0}});
  EXPECT_TRUE(fine.anomalies.empty());
  EXPECT_EQ(fine.stale_refused, 1);
}

TEST(FenceChecker, OneWriteAtTwoRevisionsIsAnAnomaly) {
  FencedWrite accepted{1, 5, 0, 0, 1, FencedWrite::Outcome::kAccepted, false};
  // The same call (client 1, sequence 0) applied again after another write of the same holder.
  auto check = CheckFencedRegister({accepted}, {{10, 5, 1, 0}, {11, 5, 1, 1}, {12, 5, 1, 0}});
  ASSERT_EQ(check.anomalies.size(), 1u);
  EXPECT_NE(check.anomalies[0].find("applied twice"), std::string::npos);
  EXPECT_TRUE(CheckFencedRegister({accepted}, {{10, 5, 1, 0}, {11, 5, 1, 1}}).anomalies.empty());
}

TEST(BlobChecker, OverlappingHoldingsOfTwoClientsAreAnAnomaly) {
  BlobHolding a{1, "a", 0, 15 * kS};
  BlobHolding b{2, "b", 10 * kS, 25 * kS};
  EXPECT_EQ(CheckBlobLeases({a, b}, {}).anomalies.size(), 1u);
  b.acquired_ns = 16 * kS;
  EXPECT_TRUE(CheckBlobLeases({a, b}, {}).anomalies.empty());
}

TEST(BlobChecker, WriteAcceptedUnderASupersededLeaseIsAnAnomaly) {
  BlobHolding a{1, "a", 0, 15 * kS};
  BlobHolding b{2, "b", 16 * kS, 31 * kS};
  BlobWrite stale{1, "a", 17 * kS, 17 * kS + 1, 201, true};
  EXPECT_EQ(CheckBlobLeases({a, b}, {stale}).anomalies.size(), 1u);
  stale.status = 412;
  auto check = CheckBlobLeases({a, b}, {stale});
  EXPECT_TRUE(check.anomalies.empty());
  EXPECT_EQ(check.stale_refused, 1);
  // Before anyone else acquired, a write under a run-out lease says nothing about safety.
  BlobWrite early{1, "a", 15 * kS + 1, 15 * kS + 2, 201, true};
  EXPECT_TRUE(CheckBlobLeases({a, b}, {early}).anomalies.empty());
}

TEST(AcknowledgedWrites, MissingOnlyIfAcknowledgedBeforeTheRead) {
  std::vector<std::pair<std::string, int64_t>> acked = {{"a", 1}, {"b", 5}};
  EXPECT_TRUE(MissingAcknowledged(acked, {"a"}, 3, "x").empty());
  EXPECT_EQ(MissingAcknowledged(acked, {"a"}, 6, "x").size(), 1u);
}

// A history of three revisions: a created, a updated, a deleted.
std::vector<WatchedEvent> ThreeRevisions() {
  WatchedEvent created{2, "a", true, "1", 2, 1, false, "", 0};
  WatchedEvent updated{3, "a", true, "2", 2, 2, true, "1", 2};
  WatchedEvent deleted{4, "a", false, "", 0, 0, true, "2", 3};
  return {created, updated, deleted};
}

WatchLog Received(std::vector<WatchedEvent> events) {
  WatchLog log;
  log.watcher = 7;
  log.streams = 1;
  for (auto& e : events) {
    WatchLog::Item item;
    item.event = std::move(e);
    log.items.push_back(std::move(item));
  }
  return log;
}

WatchLog::Item ProgressAt(int64_t revision) {
  WatchLog::Item item;
  item.progress = true;
  item.progress_revision = revision;
  return item;
}

TEST(WatchChecker, TheWholeHistoryInOrderIsClean) {
  const auto history = ThreeRevisions();
  WatchLog log = Received(history);
  log.items.insert(log.items.begin() + 1, ProgressAt(2));
  const WatchCheck check = CheckWatches({log}, history, {});
  EXPECT_TRUE(check.anomalies.empty());
  EXPECT_EQ(check.events, 3);
  EXPECT_EQ(check.progress, 1);
  // A watcher that stopped early, or that started later, has nothing missing.
  EXPECT_TRUE(CheckWatches({Received({history[0]})}, history, {}).anomalies.empty());
  WatchLog late = Received({history[2]});
  late.start_revision = 4;
  EXPECT_TRUE(CheckWatches({late}, history, {}).anomalies.empty());
}

TEST(WatchChecker, AGapADuplicateOrAReorderingIsAnAnomaly) {
  const auto history = ThreeRevisions();
  EXPECT_EQ(CheckWatches({Received({history[0], history[2]})}, history, {}).anomalies.size(), 1u);
  EXPECT_EQ(CheckWatches({Received({history[0], history[0]})}, history, {}).anomalies.size(), 1u);
  EXPECT_EQ(CheckWatches({Received({history[1], history[0]})}, history, {}).anomalies.size(), 1u);
  WatchedEvent wrong_prev = history[1];
  wrong_prev.prev_value = "0";
  EXPECT_EQ(CheckWatches({Received({history[0], wrong_prev})}, history, {}).anomalies.size(), 1u);
}

// A filtered watcher must receive exactly what its filter selects, prev_kv only when asked.
TEST(WatchChecker, AFilteredWatcherGetsWhatItsFilterSelectsAndNothingElse) {
  const auto history = ThreeRevisions();
  WatchFilter deletes_only;
  deletes_only.no_put = true;
  WatchLog log = Received({history[2]});
  log.filter = deletes_only;
  EXPECT_TRUE(CheckWatches({log}, history, {}).anomalies.empty());
  log.items.insert(log.items.begin(), Received({history[0]}).items[0]);  // a put it excluded
  EXPECT_EQ(CheckWatches({log}, history, {}).anomalies.size(), 1u);

  WatchFilter puts_without_prev;
  puts_without_prev.no_delete = true;
  puts_without_prev.prev_kv = false;
  WatchLog with_prev = Received({history[0], history[1]});  // history[1] carries a prev_kv
  with_prev.filter = puts_without_prev;
  EXPECT_EQ(CheckWatches({with_prev}, history, {}).anomalies.size(), 1u);
  WatchLog without_prev =
      Received({puts_without_prev.Shown(history[0]), puts_without_prev.Shown(history[1])});
  without_prev.filter = puts_without_prev;
  EXPECT_TRUE(CheckWatches({without_prev}, history, {}).anomalies.empty());

  WatchFilter other_prefix;
  other_prefix.prefix = "b";
  WatchLog unrelated = Received({history[0]});
  unrelated.filter = other_prefix;
  EXPECT_EQ(CheckWatches({unrelated}, history, {}).anomalies.size(), 1u);
  // A progress notification past every event of "a" is not ahead of anything it wants.
  WatchLog quiet;
  quiet.filter = other_prefix;
  quiet.items.push_back(ProgressAt(4));
  EXPECT_TRUE(CheckWatches({quiet}, history, {}).anomalies.empty());
}

TEST(WatchChecker, AProgressNotificationAheadOfAnEventIsAnAnomaly) {
  const auto history = ThreeRevisions();
  WatchLog log = Received({history[0]});
  log.items.push_back(ProgressAt(3));  // revision 3's event has not come yet
  EXPECT_EQ(CheckWatches({log}, history, {}).anomalies.size(), 1u);
}

TEST(WatchChecker, AHistoryThatDisagreesWithItselfIsAnAnomaly) {
  auto history = ThreeRevisions();
  history[1].prev_mod_revision = 1;  // not the key's previous version
  EXPECT_FALSE(CheckWatches({}, history, {}).anomalies.empty());
  history = ThreeRevisions();
  history[1].version = 1;  // the second version of the key
  EXPECT_FALSE(CheckWatches({}, history, {}).anomalies.empty());
}

TEST(WatchChecker, OneRevisionSplitAcrossResponsesIsAnAnomaly) {
  // One transaction puts two keys at revision 2.
  const std::vector<WatchedEvent> history = {{2, "a", true, "1", 2, 1, false, "", 0},
                                             {2, "b", true, "1", 2, 1, false, "", 0}};
  const std::map<std::string, std::string> state = {{"a", "1"}, {"b", "1"}};
  WatchLog log = Received(history);
  EXPECT_TRUE(CheckWatches({log}, history, state).anomalies.empty());
  log.items[1].response = 1;
  EXPECT_EQ(CheckWatches({log}, history, state).anomalies.size(), 1u);
}

TEST(WatchChecker, AHistoryThatDoesNotLeaveTheStoresKeysIsAnAnomaly) {
  auto history = ThreeRevisions();
  EXPECT_TRUE(CheckWatches({}, history, {}).anomalies.empty());
  // The store lost the key, and the history has no delete for it: an expiry's DELETE missing.
  history.pop_back();
  EXPECT_EQ(CheckWatches({}, history, {}).anomalies.size(), 1u);
  EXPECT_TRUE(CheckWatches({}, history, {{"a", "2"}}).anomalies.empty());
  EXPECT_EQ(CheckWatches({}, history, {{"a", "3"}}).anomalies.size(), 1u);
}

}  // namespace
}  // namespace leasehold::faults
