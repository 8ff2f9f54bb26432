// The node loop on a real store, with its clock in the test's hands: while the fake clock stands
// still nothing ticks (no election, no timeout), and moving it decides what happens next.
#include "server/member/node_loop.h"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "common/etcd_errors.h"
#include "tests/storage/temp_dir.h"

namespace leasehold::server {
namespace {

class DroppingSender : public MessageSender {
 public:
  void Send(std::vector<raftpb::Message>) override {}  // no peer answers
};

class NodeLoopTest : public ::testing::Test {
 protected:
  // A member of `voters` founding members (itself id 1; the others never answer).
  void Start(int voters) {
    auto engine = storage::Engine::Open(dir_.Sub("data"));
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
    auto sm = storage::StateMachine::Open(engine_.get(), storage::StateMachine::Options{});
    ASSERT_TRUE(sm.ok()) << sm.status();
    state_machine_ = *std::move(sm);
    auto log = storage::RaftLogStore::Open(engine_.get());
    ASSERT_TRUE(log.ok()) << log.status();
    log_store_ = *std::move(log);
    NodeLoop::Options options;
    options.id = 1;
    for (int i = 1; i <= voters; ++i) {
      internalpb::MemberRecord m;
      m.set_id(i);
      m.set_name("m" + std::to_string(i));
      m.add_peer_urls("http://127.0.0.1:" + std::to_string(2380 + i));
      options.bootstrap_members.push_back(m);
    }
    options.self = options.bootstrap_members[0];
    options.steady_ms = [this] { return now_ms_.load(); };
    loop_ = std::make_unique<NodeLoop>(engine_.get(), state_machine_.get(), log_store_.get(),
                                       &sender_, options, nullptr);
    ASSERT_TRUE(loop_->Start().ok());
  }

  void TearDown() override {
    if (loop_) loop_->Stop();
  }

  // Proposes a put of `key`; the future gets its result.
  std::future<storage::ApplyResult> Put(const std::string& key) {
    auto result = std::make_shared<std::promise<storage::ApplyResult>>();
    internalpb::InternalRequest entry;
    entry.set_id(++next_id_);
    entry.mutable_put()->set_key(key);
    entry.mutable_put()->set_value("v");
    loop_->Propose(entry, [result](storage::ApplyResult r) { result->set_value(std::move(r)); });
    return result->get_future();
  }

  // Waits, in real time, for `condition`; the loop wakes at least every tick.
  template <typename Condition>
  bool Eventually(Condition condition) {
    for (int i = 0; i < 200; ++i) {
      if (condition()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return condition();
  }

  testing::TempDir dir_;
  std::unique_ptr<storage::Engine> engine_;
  std::unique_ptr<storage::StateMachine> state_machine_;
  std::unique_ptr<storage::RaftLogStore> log_store_;
  DroppingSender sender_;
  std::unique_ptr<NodeLoop> loop_;
  std::atomic<int64_t> now_ms_{1'000'000};
  uint64_t next_id_ = 0;
};

TEST_F(NodeLoopTest, ASoleVoterLeadsAtOnceAndApplies) {
  Start(/*voters=*/1);  // it campaigns as it starts: no tick needed
  ASSERT_TRUE(Eventually([&] { return loop_->leader_id() == 1; }));
  std::future<storage::ApplyResult> put = Put("k");
  ASSERT_EQ(put.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  storage::ApplyResult result = put.get();
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_GE(state_machine_->revision(), 2);
}

TEST_F(NodeLoopTest, AProposalHeldWithoutALeaderFailsNoLeaderOnceItsTimeHasPassed) {
  Start(/*voters=*/3);  // two peers that never answer: never a leader
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(loop_->term(), 1u) << "no tick has passed on the test's clock: no campaign yet";
  std::future<storage::ApplyResult> put = Put("k");
  ASSERT_TRUE(Eventually([&] { return loop_->pending_proposals() == 1; }));
  now_ms_ += 6000;  // within the request timeout (7 s): still held
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(put.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  now_ms_ += 1100;
  ASSERT_EQ(put.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(put.get().status, errors::NoLeader());
  // The answer may reach the caller a moment before the loop drops its count (another thread).
  EXPECT_TRUE(Eventually([&] { return loop_->pending_proposals() == 0; }));
}

}  // namespace
}  // namespace leasehold::server
