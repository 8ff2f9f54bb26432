// ManagedLease, Mutex, Election and Registry of the client library, and the server's v3lockpb /
// v3electionpb services built on them, against a real server.
#include <thread>

#include <gtest/gtest.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "client/leasehold/client.h"
#include "client/leasehold/election.h"
#include "client/leasehold/managed_lease.h"
#include "client/leasehold/mutex.h"
#include "client/leasehold/registry.h"
#include "test_server.h"
#include "v3electionpb/v3election.grpc.pb.h"
#include "v3lockpb/v3lock.grpc.pb.h"

namespace leasehold {
namespace {

using testing::TestServer;

class RecipesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new TestServer(); }
  static void TearDownTestSuite() { delete server_; }
  void SetUp() override {
    ClientOptions options;
    options.endpoints = {server_->endpoint()};
    options.request_timeout = absl::Seconds(5);
    client_ = *Client::Connect(options);
  }
  static TestServer* server_;
  std::unique_ptr<Client> client_;
};
TestServer* RecipesTest::server_ = nullptr;

TEST_F(RecipesTest, ManagedLeaseOutlivesItsTtlAndIsRevokedWhenDestroyed) {
  auto lease = ManagedLease::Grant(client_.get(), 2);
  ASSERT_TRUE(lease.ok()) << lease.status();
  const int64_t id = (*lease)->id();
  absl::SleepFor(absl::Seconds(3));
  auto ttl = client_->LeaseTimeToLive(id);
  ASSERT_TRUE(ttl.ok());
  // Alive (a gone lease answers -1). Its remaining seconds, rounded down as etcd does, may read 0
  // when a renewal (due every TTL/3) comes a third of a second late on a loaded machine.
  EXPECT_GE(ttl->ttl(), 0) << "kept alive past its 2 s TTL";
  EXPECT_FALSE((*lease)->lost().cancelled());
  EXPECT_GT((*lease)->confirmed_until(), absl::Now());
  lease->reset();
  ttl = client_->LeaseTimeToLive(id);
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(ttl->ttl(), -1) << "revoked on destruction";
}

TEST_F(RecipesTest, ManagedLeaseSignalsLossWhenRevokedElsewhere) {
  auto lease = ManagedLease::Grant(client_.get(), 3);
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(client_->LeaseRevoke((*lease)->id()).ok());
  // Learned at the next renewal, which is due within TTL/3.
  EXPECT_TRUE((*lease)->lost().WaitFor(absl::Seconds(2)));
  EXPECT_NE((*lease)->lost().reason().find("revoked or has expired"), std::string::npos);
}

TEST_F(RecipesTest, KeepAdoptsAnExistingLeaseAndRefusesAMissingOne) {
  auto granted = client_->LeaseGrant(2);
  ASSERT_TRUE(granted.ok());
  auto kept = ManagedLease::Keep(client_.get(), granted->id());
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ((*kept)->ttl_seconds(), 2);
  auto missing = ManagedLease::Keep(client_.get(), 987654321);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RecipesTest, MutexHandsOverByWatchAndFencesTheStaleHolder) {
  auto a_lease = ManagedLease::Grant(client_.get(), 10);
  auto b_lease = ManagedLease::Grant(client_.get(), 10);
  ASSERT_TRUE(a_lease.ok() && b_lease.ok());
  Mutex a(client_.get(), "m", (*a_lease)->id()), b(client_.get(), "m", (*b_lease)->id());
  auto a_token = a.Lock(absl::Seconds(5));
  ASSERT_TRUE(a_token.ok()) << a_token.status();
  EXPECT_EQ(a_token->key, a.key());
  absl::StatusOr<LockToken> b_token;
  absl::Time b_acquired;
  std::thread waiter([&] {
    b_token = b.Lock(absl::Seconds(5));
    b_acquired = absl::Now();
  });
  absl::SleepFor(absl::Milliseconds(300));
  const absl::Time released = absl::Now();
  ASSERT_TRUE(a.Unlock().ok());
  waiter.join();
  ASSERT_TRUE(b_token.ok()) << b_token.status();
  EXPECT_GT(b_token->fencing_token, a_token->fencing_token);
  EXPECT_LT(b_acquired - released, absl::Seconds(1)) << "woken by the delete event, not a poll";

  // The stale holder's guarded write is refused; the current holder's goes through.
  etcdserverpb::TxnRequest write;
  auto* put = write.add_success()->mutable_request_put();
  put->set_key("m-guarded");
  put->set_value("a");
  *write.add_compare() = Mutex::HeldBy(*a_token);
  auto stale = client_->Txn(write);
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->succeeded());
  *write.mutable_compare(0) = Mutex::HeldBy(*b_token);
  auto fresh = client_->Txn(write);
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(fresh->succeeded());
  ASSERT_TRUE(b.Unlock().ok());
}

TEST_F(RecipesTest, MutexTimeoutLeavesTheQueueAndHandsTheWorkBack) {
  auto a_lease = ManagedLease::Grant(client_.get(), 10);
  auto b_lease = ManagedLease::Grant(client_.get(), 10);
  Mutex a(client_.get(), "t", (*a_lease)->id()), b(client_.get(), "t", (*b_lease)->id());
  ASSERT_TRUE(a.Lock(absl::Seconds(5)).ok());
  auto timed_out = b.Lock(absl::Milliseconds(300));
  EXPECT_EQ(timed_out.status().code(), absl::StatusCode::kDeadlineExceeded);
  auto b_key = client_->Get(b.key());
  ASSERT_TRUE(b_key.ok());
  EXPECT_FALSE(b_key->has_value()) << "the waiter withdrew its key";
  CancellationSource cancel;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(200));
    cancel.Cancel("shutting down");
  });
  auto cancelled = b.Lock(absl::Seconds(10), cancel.token());
  canceller.join();
  EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(a.Unlock().ok());
  EXPECT_TRUE(b.Lock(absl::Seconds(1)).ok());
  ASSERT_TRUE(b.Unlock().ok());
}

TEST_F(RecipesTest, MutexWaiterWhoseLeaseEndsIsToldSo) {
  auto a_lease = ManagedLease::Grant(client_.get(), 10);
  auto b_grant = client_->LeaseGrant(10);
  Mutex a(client_.get(), "e", (*a_lease)->id()), b(client_.get(), "e", b_grant->id());
  ASSERT_TRUE(a.Lock(absl::Seconds(5)).ok());
  absl::StatusOr<LockToken> b_token;
  std::thread waiter([&] { b_token = b.Lock(absl::Seconds(5)); });
  absl::SleepFor(absl::Milliseconds(200));
  ASSERT_TRUE(client_->LeaseRevoke(b_grant->id()).ok());
  ASSERT_TRUE(a.Unlock().ok());
  waiter.join();
  EXPECT_EQ(b_token.status().code(), absl::StatusCode::kFailedPrecondition) << b_token.status();
}

TEST_F(RecipesTest, ElectionCampaignProclaimObserveResign) {
  auto a_lease = ManagedLease::Grant(client_.get(), 10);
  auto b_lease = ManagedLease::Grant(client_.get(), 10);
  Election election(client_.get(), "el");
  EXPECT_EQ(election.Leader().status().message(), "election: no leader");

  absl::Mutex mu;
  std::vector<std::string> observed;
  CancellationSource stop;
  std::thread observer([&] {
    election
        .Observe(
            [&](const etcdserverpb::ResponseHeader&, const mvccpb::KeyValue& kv) {
              absl::MutexLock lock(&mu);
              observed.push_back(kv.value());
            },
            stop.token())
        .IgnoreError();
  });
  auto a = election.Campaign((*a_lease)->id(), "a1", absl::Seconds(5));
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<LeaderKey> b;
  std::thread b_campaign([&] { b = election.Campaign((*b_lease)->id(), "b1", absl::Seconds(5)); });
  absl::SleepFor(absl::Milliseconds(300));
  auto leader = election.Leader();
  ASSERT_TRUE(leader.ok());
  EXPECT_EQ(leader->kvs(0).value(), "a1");
  ASSERT_TRUE(election.Proclaim(*a, "a2").ok());
  ASSERT_TRUE(election.Resign(*a).ok());
  b_campaign.join();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_GT(b->rev, a->rev);
  EXPECT_EQ(election.Proclaim(*a, "stale").status().message(), "election: not leader");
  absl::SleepFor(absl::Milliseconds(300));
  stop.Cancel("done");
  observer.join();
  absl::MutexLock lock(&mu);
  EXPECT_EQ(observed, (std::vector<std::string>{"a1", "a2", "b1"}));
}

TEST_F(RecipesTest, RegistryListsAndWatchesInstances) {
  Registry registry(client_.get());
  auto one = registry.Register("api", "one", "10.0.0.1:80", 5);
  ASSERT_TRUE(one.ok()) << one.status();
  absl::Mutex mu;
  std::vector<std::pair<std::string, bool>> changes;
  std::vector<Instance> initial;
  auto watch = registry.WatchService("api", &initial, [&](const Instance& i, bool up) {
    absl::MutexLock lock(&mu);
    changes.emplace_back(i.name, up);
  });
  ASSERT_TRUE(watch.ok());
  ASSERT_EQ(initial.size(), 1u);
  EXPECT_EQ(initial[0].value, "10.0.0.1:80");
  auto two = registry.Register("api", "two", "10.0.0.2:80", 5);
  ASSERT_TRUE(two.ok());
  one->reset();  // deregisters: its lease is revoked
  absl::SleepFor(absl::Milliseconds(300));
  auto listed = registry.List("api");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "two");
  absl::MutexLock lock(&mu);
  EXPECT_EQ(changes, (std::vector<std::pair<std::string, bool>>{{"two", true}, {"one", false}}));
  EXPECT_EQ(registry.Register("api", "a/b", "", 5).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// --- the server's gRPC Lock and Election services ---

TEST_F(RecipesTest, LockServiceWaitsForTheHolderAndSharesKeysWithTheLibrary) {
  auto channel = grpc::CreateChannel(server_->endpoint(), grpc::InsecureChannelCredentials());
  auto lock = v3lockpb::Lock::NewStub(channel);
  auto lease = client_->LeaseGrant(10);
  ASSERT_TRUE(lease.ok());
  grpc::ClientContext c1;
  v3lockpb::LockRequest request;
  request.set_name("svc-lock");
  request.set_lease(lease->id());
  v3lockpb::LockResponse held;
  ASSERT_TRUE(lock->Lock(&c1, request, &held).ok());
  EXPECT_EQ(held.key().rfind("svc-lock/", 0), 0u);
  EXPECT_GT(held.header().revision(), 0);

  // A library Mutex on the same name queues behind it.
  auto b_lease = ManagedLease::Grant(client_.get(), 10);
  Mutex b(client_.get(), "svc-lock", (*b_lease)->id());
  EXPECT_EQ(b.Lock(absl::Milliseconds(300)).status().code(), absl::StatusCode::kDeadlineExceeded);
  std::thread unlocker([&] {
    absl::SleepFor(absl::Milliseconds(200));
    grpc::ClientContext c2;
    v3lockpb::UnlockRequest unlock;
    unlock.set_key(held.key());
    v3lockpb::UnlockResponse unlocked;
    EXPECT_TRUE(lock->Unlock(&c2, unlock, &unlocked).ok());
  });
  EXPECT_TRUE(b.Lock(absl::Seconds(5)).ok());
  unlocker.join();

  // A waiting Lock call whose caller gives up leaves no key behind.
  auto c_lease = client_->LeaseGrant(10);
  grpc::ClientContext c3;
  c3.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  request.set_lease(c_lease->id());
  v3lockpb::LockResponse never;
  EXPECT_EQ(lock->Lock(&c3, request, &never).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server leaves the queue once it sees the call gone: give it up to 10 s.
  auto queued = [&] {
    int count = -1;
    for (int i = 0; i < 100; ++i) {
      auto keys = client_->GetPrefix("svc-lock/");
      count = keys.ok() ? keys->kvs_size() : -1;
      if (count == 1) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    return count;
  };
  EXPECT_EQ(queued(), 1) << "only b's key remains";

  // A lease that does not exist: etcd's error, which its Lock server passes on as a plain error.
  grpc::ClientContext c4;
  request.set_lease(55555);
  grpc::Status missing = lock->Lock(&c4, request, &never);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(missing.error_message(), "etcdserver: requested lease not found");

  // A Lock call waiting behind b is handed the lock once b releases it; one with lease 0 gets a
  // session lease of its own (etcd's 60 s) and queues behind that.
  grpc::ClientContext c5;
  request.set_lease(c_lease->id());
  v3lockpb::LockResponse next;
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(200));
    EXPECT_TRUE(b.Unlock().ok());
  });
  ASSERT_TRUE(lock->Lock(&c5, request, &next).ok());
  releaser.join();
  EXPECT_EQ(next.key(), absl::StrFormat("svc-lock/%x", c_lease->id()));
  grpc::ClientContext c6;
  c6.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  request.set_lease(0);
  EXPECT_EQ(lock->Lock(&c6, request, &never).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(queued(), 1) << "the lease-0 caller left the queue when it gave up";
  grpc::ClientContext c7;
  v3lockpb::UnlockRequest unlock;
  unlock.set_key(next.key());
  v3lockpb::UnlockResponse unlocked;
  ASSERT_TRUE(lock->Unlock(&c7, unlock, &unlocked).ok());
  grpc::ClientContext c8;
  v3lockpb::LockResponse fresh;
  ASSERT_TRUE(lock->Lock(&c8, request, &fresh).ok());
  int64_t session_lease = 0;
  ASSERT_TRUE(absl::SimpleHexAtoi(fresh.key().substr(fresh.key().find('/') + 1), &session_lease));
  auto ttl = client_->LeaseTimeToLive(session_lease);
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(ttl->grantedttl(), 60);
}

// A Lock or Campaign call whose lease ends while it waits does not come back holding anything.
TEST_F(RecipesTest, LockAndCampaignCallsWhoseLeaseEndsWhileWaitingFail) {
  auto channel = grpc::CreateChannel(server_->endpoint(), grpc::InsecureChannelCredentials());
  auto lock = v3lockpb::Lock::NewStub(channel);
  auto election = v3electionpb::Election::NewStub(channel);
  auto holder = client_->LeaseGrant(30);
  auto waiter = client_->LeaseGrant(30);
  ASSERT_TRUE(holder.ok() && waiter.ok());
  grpc::ClientContext c1;
  v3lockpb::LockRequest lock_request;
  lock_request.set_name("gone-lock");
  lock_request.set_lease(holder->id());
  v3lockpb::LockResponse held;
  ASSERT_TRUE(lock->Lock(&c1, lock_request, &held).ok());
  grpc::ClientContext c2;
  v3electionpb::CampaignRequest campaign_request;
  campaign_request.set_name("gone-el");
  campaign_request.set_lease(holder->id());
  v3electionpb::CampaignResponse leading;
  ASSERT_TRUE(election->Campaign(&c2, campaign_request, &leading).ok());

  grpc::Status lock_status, campaign_status;
  std::thread lock_waiter([&] {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v3lockpb::LockRequest request = lock_request;
    request.set_lease(waiter->id());
    v3lockpb::LockResponse response;
    lock_status = lock->Lock(&c, request, &response);
  });
  std::thread campaign_waiter([&] {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v3electionpb::CampaignRequest request = campaign_request;
    request.set_lease(waiter->id());
    v3electionpb::CampaignResponse response;
    campaign_status = election->Campaign(&c, request, &response);
  });
  // Both are queued once their keys exist; then their lease goes, and the holders step down.
  for (int i = 0; i < 200; ++i) {
    auto locks = client_->GetPrefix("gone-lock/");
    auto campaigns = client_->GetPrefix("gone-el/");
    if (locks.ok() && campaigns.ok() && locks->kvs_size() == 2 && campaigns->kvs_size() == 2) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(client_->LeaseRevoke(waiter->id()).ok());
  ASSERT_TRUE(client_->LeaseRevoke(holder->id()).ok());
  lock_waiter.join();
  campaign_waiter.join();
  // etcd 3.4 answered success here (Jepsen's #11456); the errors are those of its fix.
  EXPECT_EQ(lock_status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(lock_status.error_message(), "mutex: session is expired");
  EXPECT_EQ(campaign_status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(campaign_status.error_message(), "election: not leader");
}

TEST_F(RecipesTest, ElectionServiceMatchesEtcd) {
  auto channel = grpc::CreateChannel(server_->endpoint(), grpc::InsecureChannelCredentials());
  auto election = v3electionpb::Election::NewStub(channel);
  auto lease = client_->LeaseGrant(10);
  {
    grpc::ClientContext c;
    v3electionpb::LeaderRequest request;
    request.set_name("svc-el");
    v3electionpb::LeaderResponse response;
    grpc::Status none = election->Leader(&c, request, &response);
    EXPECT_EQ(none.error_code(), grpc::StatusCode::UNKNOWN);
    EXPECT_EQ(none.error_message(), "election: no leader");
  }
  v3electionpb::CampaignResponse campaign;
  {
    grpc::ClientContext c;
    v3electionpb::CampaignRequest request;
    request.set_name("svc-el");
    request.set_lease(lease->id());
    request.set_value("v1");
    ASSERT_TRUE(election->Campaign(&c, request, &campaign).ok());
    EXPECT_EQ(campaign.leader().name(), "svc-el");
    EXPECT_EQ(campaign.leader().lease(), lease->id());
    EXPECT_EQ(campaign.header().revision(), campaign.leader().rev());
  }
  {
    // A second campaigner waits; once it leads, its header is still that of its queueing.
    auto second = client_->LeaseGrant(10);
    ASSERT_TRUE(second.ok());
    v3electionpb::CampaignResponse waited;
    grpc::Status waited_status;
    std::thread waiter([&] {
      grpc::ClientContext c;
      c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      v3electionpb::CampaignRequest request;
      request.set_name("svc-el");
      request.set_lease(second->id());
      request.set_value("w");
      waited_status = election->Campaign(&c, request, &waited);
    });
    for (int i = 0; i < 200 && client_->GetPrefix("svc-el/")->kvs_size() < 2; ++i)
      absl::SleepFor(absl::Milliseconds(10));
    ASSERT_TRUE(client_->Put("svc-el-other", "x").ok());  // the store moves on meanwhile
    ASSERT_TRUE(client_->LeaseRevoke(lease->id()).ok());
    waiter.join();
    ASSERT_TRUE(waited_status.ok()) << waited_status.error_message();
    EXPECT_EQ(waited.header().revision(), waited.leader().rev());
    EXPECT_LT(waited.header().revision(), client_->Get("svc-el-other")->value().mod_revision());
    // Leadership passes back to a campaigner on the original lease name for the rest of the test.
    lease = client_->LeaseGrant(10);
    ASSERT_TRUE(lease.ok());
    grpc::ClientContext c;
    v3electionpb::ResignRequest resign;
    *resign.mutable_leader() = waited.leader();
    v3electionpb::ResignResponse resigned;
    ASSERT_TRUE(election->Resign(&c, resign, &resigned).ok());
    grpc::ClientContext c2;
    v3electionpb::CampaignRequest request;
    request.set_name("svc-el");
    request.set_lease(lease->id());
    request.set_value("v1");
    ASSERT_TRUE(election->Campaign(&c2, request, &campaign).ok());
  }
  grpc::ClientContext observe_context;
  v3electionpb::LeaderRequest observe_request;
  observe_request.set_name("svc-el");
  auto observe = election->Observe(&observe_context, observe_request);
  v3electionpb::LeaderResponse observed;
  ASSERT_TRUE(observe->Read(&observed));
  EXPECT_EQ(observed.kv().value(), "v1");
  {
    grpc::ClientContext c;
    v3electionpb::ProclaimRequest request;
    *request.mutable_leader() = campaign.leader();
    request.set_value("v2");
    v3electionpb::ProclaimResponse response;
    ASSERT_TRUE(election->Proclaim(&c, request, &response).ok());
  }
  ASSERT_TRUE(observe->Read(&observed));
  EXPECT_EQ(observed.kv().value(), "v2");
  {
    // As etcd's, a Proclaim naming lease 0 runs on a new 60 s lease, which the value then lives on.
    grpc::ClientContext c;
    v3electionpb::ProclaimRequest request;
    *request.mutable_leader() = campaign.leader();
    request.mutable_leader()->set_lease(0);
    request.set_value("v3");
    v3electionpb::ProclaimResponse response;
    ASSERT_TRUE(election->Proclaim(&c, request, &response).ok());
    auto kv = client_->Get(campaign.leader().key());
    ASSERT_TRUE(kv.ok() && kv->has_value());
    EXPECT_EQ((*kv)->value(), "v3");
    EXPECT_NE((*kv)->lease(), 0);
    EXPECT_NE((*kv)->lease(), lease->id());
    auto ttl = client_->LeaseTimeToLive((*kv)->lease());
    ASSERT_TRUE(ttl.ok());
    EXPECT_EQ(ttl->grantedttl(), 60);
  }
  ASSERT_TRUE(observe->Read(&observed));
  EXPECT_EQ(observed.kv().value(), "v3");
  {
    grpc::ClientContext c;
    v3electionpb::ResignRequest request;
    *request.mutable_leader() = campaign.leader();
    v3electionpb::ResignResponse response;
    ASSERT_TRUE(election->Resign(&c, request, &response).ok());
  }
  {
    grpc::ClientContext c;
    v3electionpb::ProclaimRequest request;
    *request.mutable_leader() = campaign.leader();
    v3electionpb::ProclaimResponse response;
    grpc::Status st = election->Proclaim(&c, request, &response);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);
    EXPECT_EQ(st.error_message(), "election: not leader");
  }
  {
    grpc::ClientContext c;
    v3electionpb::ProclaimRequest request;
    v3electionpb::ProclaimResponse response;
    EXPECT_EQ(election->Proclaim(&c, request, &response).error_message(),
              "\"leader\" field must be provided");
  }
  observe_context.TryCancel();
  observe->Finish();
}

}  // namespace
}  // namespace leasehold
