#include "tests/faults/linearizability.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "gtest/gtest.h"

namespace leasehold::faults {
namespace {

using Kind = RegisterOp::Kind;
using Outcome = RegisterOp::Outcome;

RegisterOp Op(Kind kind, int64_t call, int64_t ret, int64_t value, int64_t expected = 0,
              Outcome outcome = Outcome::kOk) {
  RegisterOp op;
  op.kind = kind;
  op.key = "k";
  op.call_ns = call;
  op.return_ns = ret;
  op.value = value;
  op.expected = expected;
  op.outcome = outcome;
  return op;
}

TEST(Linearizability, SequentialWritesAndReads) {
  EXPECT_TRUE(
      CheckRegisters({Op(Kind::kRead, 0, 1, 0), Op(Kind::kWrite, 2, 3, 5), Op(Kind::kRead, 4, 5, 5),
                      Op(Kind::kCas, 6, 7, 6, 5), Op(Kind::kRead, 8, 9, 6)})
          .linearizable);
}

TEST(Linearizability, StaleReadAfterAcknowledgedWriteFails) {
  auto result = CheckRegisters({Op(Kind::kWrite, 0, 1, 5), Op(Kind::kWrite, 2, 3, 6),
                                Op(Kind::kRead, 4, 5, 5), Op(Kind::kRead, 6, 7, 6)});
  ASSERT_FALSE(result.linearizable);
  EXPECT_EQ(result.failing_key, "k");
  // Shrunk to the two writes and the stale read.
  ASSERT_EQ(result.failing_ops.size(), 3u);
  EXPECT_EQ(result.failing_ops.back().kind, Kind::kRead);
  EXPECT_EQ(result.failing_ops.back().value, 5);
}

TEST(Linearizability, LostAcknowledgedWriteFails) {
  EXPECT_FALSE(CheckRegisters({Op(Kind::kWrite, 0, 1, 5), Op(Kind::kRead, 2, 3, 0)}).linearizable);
}

TEST(Linearizability, ConcurrentReadMaySeeEitherValue) {
  EXPECT_TRUE(CheckRegisters({Op(Kind::kWrite, 0, 1, 5), Op(Kind::kWrite, 2, 10, 6),
                              Op(Kind::kRead, 3, 4, 6), Op(Kind::kRead, 5, 11, 6)})
                  .linearizable);
  EXPECT_TRUE(CheckRegisters({Op(Kind::kWrite, 0, 1, 5), Op(Kind::kWrite, 2, 10, 6),
                              Op(Kind::kRead, 3, 4, 5), Op(Kind::kRead, 5, 11, 6)})
                  .linearizable);
  // Once a read saw the new value, a later read may not see the old one.
  EXPECT_FALSE(CheckRegisters({Op(Kind::kWrite, 0, 1, 5), Op(Kind::kWrite, 2, 10, 6),
                               Op(Kind::kRead, 3, 4, 6), Op(Kind::kRead, 5, 6, 5)})
                   .linearizable);
}

TEST(Linearizability, UnknownOutcomesMayOrMayNotHappen) {
  // Unknown write seen later: it happened.
  EXPECT_TRUE(
      CheckRegisters({Op(Kind::kWrite, 0, 0, 5, 0, Outcome::kUnknown), Op(Kind::kRead, 10, 11, 5)})
          .linearizable);
  // Unknown write never seen: it may not have happened.
  EXPECT_TRUE(
      CheckRegisters({Op(Kind::kWrite, 0, 1, 4), Op(Kind::kWrite, 2, 0, 5, 0, Outcome::kUnknown),
                      Op(Kind::kRead, 10, 11, 4)})
          .linearizable);
  // But it cannot be seen, then unseen.
  EXPECT_FALSE(
      CheckRegisters({Op(Kind::kWrite, 0, 1, 4), Op(Kind::kWrite, 2, 0, 5, 0, Outcome::kUnknown),
                      Op(Kind::kRead, 10, 11, 5), Op(Kind::kRead, 12, 13, 4)})
          .linearizable);
  // A CAS whose swap was seen must have found its expected value.
  EXPECT_FALSE(
      CheckRegisters({Op(Kind::kWrite, 0, 1, 4), Op(Kind::kCas, 2, 0, 6, 5, Outcome::kUnknown),
                      Op(Kind::kRead, 10, 11, 6)})
          .linearizable);
}

TEST(Linearizability, KeysAreCheckedIndependently) {
  RegisterOp a = Op(Kind::kWrite, 0, 1, 5);
  RegisterOp b = Op(Kind::kRead, 2, 3, 0);
  b.key = "other";
  auto result = CheckRegisters({a, b});
  EXPECT_TRUE(result.linearizable);
  EXPECT_EQ(result.keys, 2u);
}

// A register simulated with random latencies: each operation takes effect at a random point inside
// its interval, so the history is linearizable by construction.
std::vector<RegisterOp> SimulatedHistory(uint64_t seed, int processes, int ops_per_key, int keys) {
  std::mt19937_64 rng(seed);
  struct Pending {
    RegisterOp op;
    int64_t effect_ns;
  };
  std::vector<RegisterOp> history;
  int64_t next_value = 1;
  for (int k = 0; k < keys; ++k) {
    int64_t state = 0;
    std::vector<int64_t> free_at(processes, 0);
    std::vector<Pending> events;
    // Generate per process intervals, then decide effects in effect-time order.
    for (int i = 0; i < ops_per_key; ++i) {
      const int p = static_cast<int>(rng() % processes);
      RegisterOp op;
      op.key = "k" + std::to_string(k);
      op.process = p;
      op.id = static_cast<int64_t>(history.size() + events.size());
      op.call_ns = free_at[p] + static_cast<int64_t>(rng() % 1000);
      op.return_ns = op.call_ns + 1 + static_cast<int64_t>(rng() % 5000);
      free_at[p] = op.return_ns;
      const int r = static_cast<int>(rng() % 10);
      op.kind = r < 5 ? Kind::kRead : r < 8 ? Kind::kWrite : Kind::kCas;
      if (rng() % 50 == 0 && op.kind != Kind::kRead) op.outcome = Outcome::kUnknown;
      events.push_back(
          {op, op.call_ns +
                   static_cast<int64_t>(rng() % static_cast<uint64_t>(op.return_ns - op.call_ns))});
    }
    std::sort(events.begin(), events.end(),
              [](const Pending& a, const Pending& b) { return a.effect_ns < b.effect_ns; });
    for (Pending& e : events) {
      RegisterOp& op = e.op;
      switch (op.kind) {
        case Kind::kRead:
          op.value = state;
          break;
        case Kind::kWrite:
          op.value = next_value++;
          state = op.value;
          break;
        case Kind::kCas:
          op.expected = (rng() % 2 == 0) ? state : state + 1000000;
          op.value = next_value++;
          if (op.expected == state) {
            state = op.value;
          } else if (op.outcome == Outcome::kOk) {
            op.outcome = Outcome::kFail;
          }
          break;
      }
      history.push_back(op);
    }
  }
  return history;
}

TEST(Linearizability, TenThousandOperationsCheckAndACorruptedOneFails) {
  auto history = SimulatedHistory(42, 10, 2000, 5);
  ASSERT_EQ(history.size(), 10000u);
  const auto start = std::chrono::steady_clock::now();
  auto result = CheckRegisters(history);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(result.linearizable)
      << Describe(result.failing_ops.empty() ? RegisterOp{} : result.failing_ops.back());
  std::printf("10,000 operations (%zu after pruning) checked in %.3f s, %zu configurations\n",
              result.ops_checked, seconds, result.configurations);

  // Make one late read of key k2 return a value written long before: a stale read.
  std::vector<RegisterOp> corrupted = history;
  int64_t early_value = 0;
  for (const RegisterOp& op : corrupted) {
    if (op.key == "k2" && op.kind == Kind::kWrite && op.outcome == Outcome::kOk) {
      early_value = op.value;
      break;
    }
  }
  for (auto it = corrupted.rbegin(); it != corrupted.rend(); ++it) {
    if (it->key == "k2" && it->kind == Kind::kRead && it->value != early_value) {
      it->value = early_value;
      break;
    }
  }
  auto bad = CheckRegisters(corrupted);
  EXPECT_FALSE(bad.linearizable);
  EXPECT_EQ(bad.failing_key, "k2");
  EXPECT_FALSE(bad.failing_ops.empty());
  EXPECT_LT(bad.failing_ops.size(), 50u);
  EXPECT_FALSE(IsLinearizable(bad.failing_ops));
}

}  // namespace
}  // namespace leasehold::faults
