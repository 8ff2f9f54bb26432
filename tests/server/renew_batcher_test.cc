// RenewBatcher: keep-alives that arrive while a batch is on its way go together as the next one,
// each answered as the leader answered it; a leader without LeaseRenewMany gets one LeaseRenew per
// keep-alive; an unreachable leader, or a caller that has given up, is "no leader".
#include "server/member/renew_batcher.h"

#include <atomic>
#include <map>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "common/etcd_errors.h"
#include "leasehold/peer.grpc.pb.h"
#include "server/member/leader_forwarder.h"

namespace leasehold::server {
namespace {

constexpr uint64_t kLeader = 2;
constexpr int64_t kUnknownLease = 13;  // the leader answers NOT_FOUND
constexpr int64_t kDeposedLease = 14;  // the leader answers UNAVAILABLE (it no longer leads)

etcdserverpb::LeaseKeepAliveRequest RenewalOf(int64_t id) {
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(id);
  return request;
}

// A leader whose LeaseRenewMany answers ttl = 10 × id, holding its first call until released.
class BatchingLeader : public peerpb::RaftPeer::CallbackService {
 public:
  grpc::ServerUnaryReactor* LeaseRenewMany(grpc::CallbackServerContext* context,
                                           const peerpb::LeaseRenewBatch* request,
                                           peerpb::LeaseRenewResults* response) override {
    bool first;
    {
      absl::MutexLock lock(&mu);
      batch_sizes.push_back(request->requests_size());
      first = batch_sizes.size() == 1;
    }
    if (first) {
      first_arrived.Notify();
      release.WaitForNotification();
    }
    for (const auto& renewal : request->requests()) {
      peerpb::LeaseRenewOutcome* outcome = response->add_outcomes();
      if (renewal.id() == kUnknownLease) {
        outcome->set_code(grpc::StatusCode::NOT_FOUND);
        outcome->set_message("etcdserver: requested lease not found");
      } else if (renewal.id() == kDeposedLease) {
        outcome->set_code(grpc::StatusCode::UNAVAILABLE);
        outcome->set_message("etcdserver: not leader");
      } else {
        outcome->mutable_response()->set_id(renewal.id());
        outcome->mutable_response()->set_ttl(renewal.id() * 10);
      }
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  absl::Mutex mu;
  std::vector<int> batch_sizes ABSL_GUARDED_BY(mu);
  absl::Notification first_arrived, release;
};

// An older leader: LeaseRenew only (LeaseRenewMany is UNIMPLEMENTED).
class PerCallLeader : public peerpb::RaftPeer::CallbackService {
 public:
  grpc::ServerUnaryReactor* LeaseRenew(grpc::CallbackServerContext* context,
                                       const etcdserverpb::LeaseKeepAliveRequest* request,
                                       etcdserverpb::LeaseKeepAliveResponse* response) override {
    calls.fetch_add(1);
    response->set_id(request->id());
    response->set_ttl(request->id() * 10);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  std::atomic<int> calls{0};
};

struct Leader {
  explicit Leader(grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service);
    server = builder.BuildAndStart();
    channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                  grpc::InsecureChannelCredentials());
  }
  ~Leader() { server->Shutdown(std::chrono::system_clock::now()); }
  int port = 0;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<grpc::Channel> channel;
};

// Answers collected by lease id.
class Answers {
 public:
  RenewBatcher::Done For(int64_t id) {
    return [this, id](absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> answer) {
      absl::MutexLock lock(&mu_);
      answers_.emplace(id, std::move(answer));
    };
  }
  // Waits until `count` answers are in (at most 15 s).
  bool WaitFor(size_t count) {
    absl::MutexLock lock(&mu_);
    wanted_ = count;
    return mu_.AwaitWithTimeout(absl::Condition(this, &Answers::Enough), absl::Seconds(15));
  }
  absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> Of(int64_t id) {
    absl::MutexLock lock(&mu_);
    return answers_.at(id);
  }

 private:
  bool Enough() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return answers_.size() >= wanted_; }

  absl::Mutex mu_;
  std::map<int64_t, absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse>> answers_
      ABSL_GUARDED_BY(mu_);
  size_t wanted_ ABSL_GUARDED_BY(mu_) = 0;
};

const absl::Time kPatient = absl::InfiniteFuture();

TEST(RenewBatcherTest, RenewalsArrivingDuringACallGoTogetherAsTheNext) {
  BatchingLeader service;
  Leader leader(&service);
  std::atomic<int> per_call{0};
  RenewBatcher batcher([&](uint64_t) { return leader.channel; }, /*timeout_ms=*/10000,
                       [&](uint64_t, absl::Time, const etcdserverpb::LeaseKeepAliveRequest&,
                           RenewBatcher::Done done) {
                         per_call.fetch_add(1);
                         done(absl::InternalError("per-call path taken"));
                       });
  Answers answers;
  batcher.Renew(kLeader, kPatient, RenewalOf(1), answers.For(1));
  ASSERT_TRUE(service.first_arrived.WaitForNotificationWithTimeout(absl::Seconds(10)));
  for (int64_t id = 2; id <= 50; ++id)
    batcher.Renew(kLeader, kPatient, RenewalOf(id), answers.For(id));
  service.release.Notify();
  ASSERT_TRUE(answers.WaitFor(50));
  {
    absl::MutexLock lock(&service.mu);
    EXPECT_EQ(service.batch_sizes, (std::vector<int>{1, 49}));
  }
  for (int64_t id = 1; id <= 50; ++id) {
    auto answer = answers.Of(id);
    if (id == kUnknownLease) {
      EXPECT_EQ(answer.status().code(), absl::StatusCode::kNotFound);
      EXPECT_EQ(answer.status().message(), "etcdserver: requested lease not found");
    } else if (id == kDeposedLease) {
      EXPECT_EQ(answer.status(), errors::NoLeader());
    } else {
      ASSERT_TRUE(answer.ok()) << id << ": " << answer.status();
      EXPECT_EQ(answer->id(), id);
      EXPECT_EQ(answer->ttl(), id * 10);
    }
  }
  EXPECT_EQ(per_call.load(), 0);
}

TEST(RenewBatcherTest, ALeaderWithoutBatchesGetsOneCallPerRenewal) {
  PerCallLeader service;
  Leader leader(&service);
  LeaderForwarder forwarder([&](uint64_t) { return leader.channel; }, /*timeout_ms=*/10000);
  Answers answers;
  for (int64_t id = 1; id <= 5; ++id)
    forwarder.Renew(kLeader, kPatient, RenewalOf(id), answers.For(id));
  ASSERT_TRUE(answers.WaitFor(5));
  for (int64_t id = 1; id <= 5; ++id) {
    auto answer = answers.Of(id);
    ASSERT_TRUE(answer.ok()) << id << ": " << answer.status();
    EXPECT_EQ(answer->ttl(), id * 10);
  }
  // Later renewals go straight to the per-call path.
  forwarder.Renew(kLeader, kPatient, RenewalOf(6), answers.For(6));
  ASSERT_TRUE(answers.WaitFor(6));
  EXPECT_EQ(answers.Of(6)->ttl(), 60);
  EXPECT_EQ(service.calls.load(), 6);
}

TEST(RenewBatcherTest, AnUnreachableLeaderOrAGivenUpCallerIsNoLeader) {
  auto refused = grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
  LeaderForwarder forwarder([&](uint64_t) { return refused; }, /*timeout_ms=*/10000);
  Answers answers;
  forwarder.Renew(kLeader, kPatient, RenewalOf(1), answers.For(1));
  forwarder.Renew(kLeader, absl::Now() - absl::Seconds(1), RenewalOf(2), answers.For(2));
  forwarder.Renew(/*leader=*/0, kPatient, RenewalOf(3), answers.For(3));
  ASSERT_TRUE(answers.WaitFor(3));
  for (int64_t id = 1; id <= 3; ++id) EXPECT_EQ(answers.Of(id).status(), errors::NoLeader());
}

}  // namespace
}  // namespace leasehold::server
