// LeaderRouter: a keep-alive or time-to-live that finds no leader waits for one (and is answered
// when one can), gives up after its wait with etcd's "no leader", and stops waiting once unwanted.
// A membership change waits out "no leader" only: the leader's refusals are final.
#include "server/member/leader_router.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/etcd_errors.h"
#include "server/member/leader_forwarder.h"
#include "server/test_proposer.h"

namespace leasehold::server {
namespace {

constexpr uint64_t kSelf = 1;  // the fixture's member
constexpr int64_t kLease = 42;

// A proposer whose leader the test chooses.
class LeaderSwitch : public Proposer {
 public:
  void Propose(internalpb::InternalRequest, Done done, Abandoned) override {
    done(storage::ApplyResult::Error(errors::NoLeader()));
  }
  void ReadBarrier(std::function<void(absl::Status)> done) override { done(absl::OkStatus()); }
  void ProposeConfChange(raftpb::ConfChange, std::function<void(absl::Status)> done) override {
    absl::Status answer;
    {
      absl::MutexLock lock(&mu);
      answer = conf_change_answer;
      ++conf_changes_proposed;
    }
    done(answer);
  }
  void TransferLeadership(uint64_t, std::function<void(absl::Status)> done) override {
    done(absl::OkStatus());
  }
  uint64_t committed_index() const override { return 0; }
  uint64_t applied_index() const override { return 0; }
  uint64_t term() const override { return 2; }
  uint64_t leader_id() const override { return leader.load(); }
  bool lease_valid() const override { return leader.load() == kSelf; }
  uint64_t leading_term() const override { return leader.load() == kSelf ? 2 : 0; }
  int64_t pending_proposals() const override { return 0; }

  std::atomic<uint64_t> leader{0};
  absl::Mutex mu;
  absl::Status conf_change_answer ABSL_GUARDED_BY(mu);  // what a membership change gets, inline
  int conf_changes_proposed ABSL_GUARDED_BY(mu) = 0;
};

class LeaderRouterTest : public MemberFixtureWith<LeaderSwitch> {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(MemberFixtureWith::SetUp());
    internalpb::InternalRequest grant;
    grant.set_time_unix_ms(Member::NowUnixMs());
    grant.mutable_lease_grant()->set_id(kLease);
    grant.mutable_lease_grant()->set_ttl(30);
    ASSERT_TRUE(sm_->Apply(1, grant).status.ok());
    sm_->FlushApplied();
  }

  // Makes this member the leader, with the expiry queue in place, as NodeLoop does.
  void Lead() {
    sm_->leases().Promote(500, Member::NowUnixMs());
    proposer_.leader = kSelf;
  }

  struct Outcome {
    absl::Notification done;
    absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> answer =
        absl::UnknownError("not answered");
    absl::Time at;
  };
  void Route(
      LeaderRouter& router, Outcome* out, std::function<bool()> wanted = [] { return true; }) {
    etcdserverpb::LeaseKeepAliveRequest request;
    request.set_id(kLease);
    router.RenewLease(request, std::move(wanted),
                      [out](absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> answer) {
                        out->answer = std::move(answer);
                        out->at = absl::Now();
                        out->done.Notify();
                      });
  }
};

TEST_F(LeaderRouterTest, WaitsForALeaderAndIsAnsweredOnceItCanRenew) {
  LeaderRouter router(member_.get(), absl::Seconds(10));
  Outcome out;
  Route(router, &out);
  EXPECT_FALSE(
      out.done.WaitForNotificationWithTimeout(absl::Milliseconds(300)));  // no leader: it waits
  const absl::Time elected = absl::Now();
  Lead();
  ASSERT_TRUE(out.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  ASSERT_TRUE(out.answer.ok()) << out.answer.status();
  EXPECT_EQ(out.answer->id(), kLease);
  EXPECT_EQ(out.answer->ttl(), 30);
  EXPECT_LT(out.at - elected, absl::Seconds(1));  // within a round or two of 50 ms, on a slow host
}

TEST_F(LeaderRouterTest, AnswersAtOnceWhenThisMemberLeads) {
  Lead();
  LeaderRouter router(member_.get(), absl::Seconds(10));
  Outcome out;
  Route(router, &out);
  ASSERT_TRUE(out.done.HasBeenNotified());  // inline: nothing to wait for
  ASSERT_TRUE(out.answer.ok());
  EXPECT_EQ(out.answer->ttl(), 30);
}

TEST_F(LeaderRouterTest, GivesUpWithNoLeaderAfterItsWait) {
  LeaderRouter router(member_.get(), absl::Milliseconds(400));
  Outcome out;
  const absl::Time start = absl::Now();
  Route(router, &out);
  ASSERT_TRUE(out.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(out.answer.status(), errors::NoLeader());
  EXPECT_GE(out.at - start, absl::Milliseconds(300));
}

TEST_F(LeaderRouterTest, StopsWaitingOnceUnwanted) {
  LeaderRouter router(member_.get(), absl::Seconds(10));
  std::atomic<bool> wanted{true};
  Outcome out;
  Route(router, &out, [&wanted] { return wanted.load(); });
  EXPECT_FALSE(out.done.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
  wanted = false;
  ASSERT_TRUE(out.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(out.answer.status(), errors::NoLeader());
}

TEST_F(LeaderRouterTest, ManyWaitersAreAllAnsweredWhenALeaderComes) {
  LeaderRouter router(member_.get(), absl::Seconds(10));
  std::vector<Outcome> outs(500);
  for (auto& out : outs) Route(router, &out);
  absl::SleepFor(absl::Milliseconds(200));
  Lead();
  for (auto& out : outs) {
    ASSERT_TRUE(out.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
    EXPECT_TRUE(out.answer.ok()) << out.answer.status();
  }
}

TEST_F(LeaderRouterTest, TimeToLiveWaitsForALeaderToo) {
  LeaderRouter router(member_.get(), absl::Seconds(10));
  absl::Notification done;
  absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> answer = absl::UnknownError("not answered");
  etcdserverpb::LeaseTimeToLiveRequest request;
  request.set_id(kLease);
  router.LeaseTimeToLive(
      request, [] { return true; },
      [&](absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> a) {
        answer = std::move(a);
        done.Notify();
      });
  EXPECT_FALSE(done.WaitForNotificationWithTimeout(absl::Milliseconds(300)));
  Lead();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->grantedttl(), 30);
  EXPECT_GT(answer->ttl(), 0);
}

template <typename Response>
struct ChangeOutcome {
  absl::Notification done;
  std::atomic<int> calls{0};
  absl::StatusOr<Response> answer = absl::UnknownError("not answered");
  Member::ChangeDone<Response> Done() {
    return [this](absl::StatusOr<Response> a) {
      answer = std::move(a);
      if (calls.fetch_add(1) == 0) done.Notify();
    };
  }
};

TEST_F(LeaderRouterTest, AMembershipChangeWaitsForALeaderAndItsRefusalIsFinal) {
  LeaderRouter router(member_.get(), absl::Seconds(10));
  ChangeOutcome<etcdserverpb::MemberPromoteResponse> out;
  etcdserverpb::MemberPromoteRequest request;
  request.set_id(9);
  router.PromoteLearner(
      request, [] { return true; }, out.Done());
  EXPECT_FALSE(
      out.done.WaitForNotificationWithTimeout(absl::Milliseconds(300)));  // no leader: it waits
  const absl::Time elected = absl::Now();
  Lead();
  ASSERT_TRUE(out.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(out.answer.status(), errors::MemberNotFound());
  EXPECT_LT(absl::Now() - elected, absl::Seconds(1));  // answered, not waited out
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(out.calls.load(), 1);
}

// A forward sent while the router waits gets only what is left of the wait, as etcd's forwarded
// calls get what is left of its request timeout: a leader that never answers costs the call its
// wait (600 ms here), not the forwarder's own timeout (7 s) on top of it.
TEST_F(LeaderRouterTest, AForwardGetsOnlyWhatIsLeftOfTheWait) {
  // The "leader": a socket that takes connections (the kernel's backlog) and never says a word.
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(silent, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(silent, 16), 0);
  ASSERT_EQ(getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  // One channel for the test's life, as the peer transport keeps one per member.
  std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), grpc::InsecureChannelCredentials());
  LeaderForwarder forwarder([channel](uint64_t) { return channel; }, /*timeout_ms=*/7000);
  MemberConfig config;
  config.member_id = kSelf;
  Member follower(config, engine_.get(), sm_.get(), &proposer_, &forwarder, &tokens_);
  proposer_.leader = 2;
  {
    LeaderRouter router(&follower, absl::Milliseconds(600));
    Outcome out;
    const absl::Time start = absl::Now();
    Route(router, &out);
    ASSERT_TRUE(out.done.WaitForNotificationWithTimeout(absl::Seconds(15)));
    EXPECT_FALSE(out.answer.ok());
    EXPECT_LT(out.at - start, absl::Seconds(3));
  }
  close(silent);
}

class MembershipRoutingTest : public LeaderRouterTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(LeaderRouterTest::SetUp());
    // This member, started (it has published its name): a second voter may join it.
    raftpb::ConfChange change;
    change.set_type(raftpb::CONF_ADD_VOTER);
    change.set_node_id(kSelf);
    internalpb::MemberRecord record;
    record.set_name("m1");
    record.add_peer_urls("http://127.0.0.1:2380");
    change.set_context(record.SerializeAsString());
    sm_->ApplyConfChange(2, change, raftpb::ConfState());
    sm_->FlushApplied();
  }
  void AnswerConfChanges(absl::Status answer) {
    absl::MutexLock lock(&proposer_.mu);
    proposer_.conf_change_answer = std::move(answer);
  }
  int ConfChangesProposed() {
    absl::MutexLock lock(&proposer_.mu);
    return proposer_.conf_changes_proposed;
  }
  void Add(LeaderRouter& router, ChangeOutcome<etcdserverpb::MemberAddResponse>* out) {
    etcdserverpb::MemberAddRequest request;
    request.add_peerurls("http://127.0.0.1:2390");
    router.AddMember(
        request, [] { return true; }, out->Done());
  }
};

TEST_F(MembershipRoutingTest, UnhealthyIsTheLeadersAnswerAndIsNotRetried) {
  Lead();
  AnswerConfChanges(errors::Unhealthy());  // Unavailable, like "no leader", but final
  LeaderRouter router(member_.get(), absl::Seconds(10));
  ChangeOutcome<etcdserverpb::MemberAddResponse> out;
  Add(router, &out);
  ASSERT_TRUE(out.done.HasBeenNotified());  // inline: the leader refused
  EXPECT_EQ(out.answer.status(), errors::Unhealthy());
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(ConfChangesProposed(), 1);
  EXPECT_EQ(out.calls.load(), 1);
}

TEST_F(MembershipRoutingTest, NoLeaderFromTheNodeLoopIsAskedAgain) {
  Lead();
  AnswerConfChanges(
      errors::NoLeader());  // as the node loop answers a leader not yet sure of its voters
  LeaderRouter router(member_.get(), absl::Seconds(10));
  ChangeOutcome<etcdserverpb::MemberAddResponse> out;
  Add(router, &out);
  EXPECT_FALSE(out.done.WaitForNotificationWithTimeout(absl::Milliseconds(300)));
  EXPECT_GE(ConfChangesProposed(), 2);  // asked again, every 50 ms
  AnswerConfChanges(absl::OkStatus());
  ASSERT_TRUE(out.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  ASSERT_TRUE(out.answer.ok()) << out.answer.status();
  EXPECT_EQ(out.answer->member().peerurls(0), "http://127.0.0.1:2390");
  EXPECT_NE(out.answer->member().id(), 0u);
  ASSERT_EQ(out.answer->members_size(), 1);  // the stand-in proposer applies nothing
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(out.calls.load(), 1);
}

}  // namespace
}  // namespace leasehold::server
