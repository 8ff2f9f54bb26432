// The client library against a 3-member cluster whose leader is killed: calls move to the surviving
// members, a managed lease is renewed through them without ever being declared lost, and a watch
// resumes on another member without a gap or a repeat.
#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "client/leasehold/client.h"
#include "client/leasehold/managed_lease.h"
#include "client/leasehold/mutex.h"
#include "test_server.h"

namespace leasehold {
namespace {

using testing::TestServer;

// Index of the member that leads, asked of each member in turn.
int FindLeader(const std::vector<std::unique_ptr<TestServer>>& members) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    for (size_t i = 0; i < members.size(); ++i) {
      auto stub = etcdserverpb::Maintenance::NewStub(
          grpc::CreateChannel(members[i]->endpoint(), grpc::InsecureChannelCredentials()));
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
      etcdserverpb::StatusResponse status;
      if (stub->Status(&context, etcdserverpb::StatusRequest(), &status).ok() &&
          status.leader() != 0 && status.leader() == status.header().member_id()) {
        return static_cast<int>(i);
      }
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return -1;
}

TEST(ClusterClientTest, LeaderKilledUnderTheClient) {
  auto members = TestServer::StartCluster(3);
  const int leader = FindLeader(members);
  ASSERT_GE(leader, 0);
  // The leader first, so the client's current member is the one that dies.
  ClientOptions options;
  options.endpoints.push_back(members[leader]->endpoint());
  for (int i = 0; i < 3; ++i) {
    if (i != leader) options.endpoints.push_back(members[i]->endpoint());
  }
  options.request_timeout = absl::Seconds(10);
  auto client = *Client::Connect(options);

  // The TTL must outlast the failover, as any etcd client's must: the client counts its lease lost
  // once it cannot confirm a renewal before the deadline its last renewal gave. A failover takes
  // one to two election timeouts (1-2 s), twice that when the two survivors split their votes, and
  // a 3 s lease renewed every second lost to such an election about one run in ten.
  constexpr int64_t kTtlSeconds = 10;
  auto lease = ManagedLease::Grant(client.get(), kTtlSeconds);
  ASSERT_TRUE(lease.ok()) << lease.status();
  absl::Mutex mu;
  std::vector<mvccpb::Event> events;
  etcdserverpb::WatchCreateRequest request;
  request.set_key("cw/");
  request.set_range_end(PrefixEnd("cw/"));
  auto watch = client->StartWatch(request, [&](const etcdserverpb::WatchResponse& r) {
    absl::MutexLock lock(&mu);
    for (const auto& e : r.events()) events.push_back(e);
  });
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE(client->Put("cw/1", "a", (*lease)->id()).ok());

  members[leader]->Kill();
  const absl::Time killed = absl::Now();
  // The next write finds the connection gone and goes to a surviving member, which elects a leader.
  absl::StatusOr<etcdserverpb::PutResponse> put;
  for (int i = 0; i < 5;
       ++i) {  // an attempt in flight when the connection dropped has an unknown outcome
    put = client->Put("cw/2", "b");
    if (put.ok()) break;
  }
  ASSERT_TRUE(put.ok()) << put.status();
  std::printf("  first write acknowledged %.0f ms after the leader was killed\n",
              absl::ToDoubleMilliseconds(absl::Now() - killed));
  ASSERT_TRUE(client->Put("cw/3", "c").ok());

  // Past the last deadline the dead leader could have given (its renewal just before the kill, plus
  // the TTL and a new leader's allowance): renewed through the survivors, never declared lost.
  absl::SleepFor(killed + absl::Seconds(kTtlSeconds + 2) - absl::Now());
  EXPECT_FALSE((*lease)->lost().cancelled()) << (*lease)->lost().reason();
  auto ttl = client->LeaseTimeToLive((*lease)->id(), true);
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_GT(ttl->ttl(), 0);
  ASSERT_EQ(ttl->keys_size(), 1);
  EXPECT_EQ(ttl->keys(0), "cw/1");

  {
    absl::MutexLock lock(&mu);
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0].kv().key(), "cw/1");
    EXPECT_EQ(events[1].kv().key(), "cw/2");
    EXPECT_EQ(events[2].kv().key(), "cw/3");
  }
  Mutex mutex(client.get(), "cluster-lock", (*lease)->id());
  auto token = mutex.Lock(absl::Seconds(5));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_TRUE(mutex.Unlock().ok());
  // Revoked through the survivors while they still have a quorum (and so not left to the lease's
  // destructor, whose best-effort revoke would wait out the request timeout below).
  EXPECT_TRUE((*lease)->Revoke().ok());
  auto revoked = client->LeaseTimeToLive((*lease)->id(), false);
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_EQ(revoked->ttl(), -1);

  // Quorum lost: the last member has no leader, and a watch stream that requires one (etcd's
  // "hasleader" metadata, sent by etcdctl and by this library) is ended with etcd's error.
  int survivor = -1;
  for (int i = 0; i < 3; ++i) {
    if (i == leader) continue;
    if (survivor < 0) {
      survivor = i;
    } else {
      members[i]->Kill();
    }
  }
  auto stub = etcdserverpb::Watch::NewStub(
      grpc::CreateChannel(members[survivor]->endpoint(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.AddMetadata("hasleader", "true");
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
  auto stream = stub->Watch(&context);
  etcdserverpb::WatchRequest create;
  create.mutable_create_request()->set_key("cw/");
  ASSERT_TRUE(stream->Write(create));
  const absl::Time cut = absl::Now();
  etcdserverpb::WatchResponse response;
  while (stream->Read(&response)) {
  }
  grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ended.error_message(), "etcdserver: no leader");
  std::printf("  require-leader watch ended %.1f s after quorum was lost\n",
              absl::ToDoubleSeconds(absl::Now() - cut));
}

}  // namespace
}  // namespace leasehold
