// LeaderForwarder: a membership change that never left this member is "no leader" (the router may
// send it again), and one that may have reached the leader is an outcome unknown ("leader
// changed"), whatever the channel's state when the call started: gRPC queues a call on an idle
// channel and sends it once connected.
#include "server/member/leader_forwarder.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "common/etcd_errors.h"
#include "leasehold/peer.grpc.pb.h"

namespace leasehold::server {
namespace {

constexpr uint64_t kLeader = 2;

// A leader's peer port that takes every MemberAdd and never answers it (until cancelled).
class SilentLeader : public peerpb::RaftPeer::CallbackService {
 public:
  grpc::ServerUnaryReactor* MemberAdd(grpc::CallbackServerContext*,
                                      const etcdserverpb::MemberAddRequest*,
                                      etcdserverpb::MemberAddResponse*) override {
    arrived.Notify();
    return new Held;
  }
  absl::Notification arrived;

 private:
  struct Held : grpc::ServerUnaryReactor {
    void OnCancel() override { Finish(grpc::Status::CANCELLED); }
    void OnDone() override { delete this; }
  };
};

// Forwards one MemberAdd over `channel`, runs `meanwhile` while it is in flight, and returns its
// answer.
absl::StatusOr<etcdserverpb::MemberAddResponse> AddThrough(
    std::shared_ptr<grpc::Channel> channel, std::function<void()> meanwhile = nullptr) {
  LeaderForwarder forwarder([channel](uint64_t) { return channel; }, /*timeout_ms=*/10000);
  etcdserverpb::MemberAddRequest request;
  request.add_peerurls("http://127.0.0.1:2390");
  absl::Notification done;
  absl::StatusOr<etcdserverpb::MemberAddResponse> answer = absl::UnknownError("not answered");
  forwarder.AddMember(kLeader, absl::Now() + absl::Seconds(10), request,
                      [&](absl::StatusOr<etcdserverpb::MemberAddResponse> a) {
                        answer = std::move(a);
                        done.Notify();
                      });
  if (meanwhile) meanwhile();
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(15)));
  return answer;
}

TEST(LeaderForwarderTest, AChangeThatCouldNotConnectIsNoLeader) {
  // Port 1 on loopback: nothing listens, so the connection is refused and nothing is sent.
  auto channel = grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
  EXPECT_EQ(AddThrough(channel).status(), errors::NoLeader());
  // Again, now that the channel has failed before (transient failure when the call starts).
  EXPECT_EQ(AddThrough(channel).status(), errors::NoLeader());
}

TEST(LeaderForwarderTest, AChangeLostAfterItWasSentIsAnOutcomeUnknown) {
  SilentLeader leader;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&leader);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(port, 0);
  // A fresh channel is idle when the call starts; gRPC connects and sends the call.
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  ASSERT_EQ(channel->GetState(/*try_to_connect=*/false), GRPC_CHANNEL_IDLE);
  auto answer = AddThrough(channel, [&] {
    ASSERT_TRUE(leader.arrived.WaitForNotificationWithTimeout(absl::Seconds(10)));
    server->Shutdown(std::chrono::system_clock::now());  // the leader goes away mid-call
  });
  EXPECT_EQ(answer.status(), errors::LeaderChanged());
}

}  // namespace
}  // namespace leasehold::server
