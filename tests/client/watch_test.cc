// leasehold::Client's KV, endpoint failover and Watch (resume, fragments, progress) against a real
// server.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "client/leasehold/client.h"
#include "test_server.h"

namespace leasehold {
namespace {

using testing::TestServer;

std::unique_ptr<Client> Connect(std::vector<std::string> endpoints) {
  ClientOptions options;
  options.endpoints = std::move(endpoints);
  options.request_timeout = absl::Seconds(5);
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok());
  return *std::move(client);
}

// Collects a watch's responses for the test thread.
class Collector {
 public:
  void Add(const etcdserverpb::WatchResponse& r) {
    absl::MutexLock lock(&mu_);
    responses_.push_back(r);
    for (const auto& e : r.events()) events_.push_back(e);
  }
  // Waits until at least `n` events arrived (or 5 s); returns them.
  std::vector<mvccpb::Event> WaitEvents(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return events_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(5));
    return events_;
  }
  std::vector<etcdserverpb::WatchResponse> responses() {
    absl::MutexLock lock(&mu_);
    return responses_;
  }
  bool WaitFor(const std::function<bool(const etcdserverpb::WatchResponse&)>& pred, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      for (const auto& r : responses()) {
        if (pred(r)) return true;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

 private:
  absl::Mutex mu_;
  std::vector<etcdserverpb::WatchResponse> responses_ ABSL_GUARDED_BY(mu_);
  std::vector<mvccpb::Event> events_ ABSL_GUARDED_BY(mu_);
};

TEST(ClientTest, KvAndFailoverFromADeadEndpoint) {
  TestServer server;
  // The first endpoint refuses connections: calls move on to the live one, writes included (a
  // refused connection proves the write was never sent).
  auto client = Connect({"127.0.0.1:" + std::to_string(TestServer::FreePort()), server.endpoint()});
  auto put = client->Put("k", "v1");
  ASSERT_TRUE(put.ok()) << put.status();
  auto got = client->Get("k");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->value(), "v1");
  EXPECT_EQ((*got)->mod_revision(), put->header().revision());
  auto missing = client->Get("nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  // etcd's errors come through as they are.
  auto bad = client->Put("", "v");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "etcdserver: key is not provided");
  auto lease = client->LeaseTimeToLive(12345);
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->ttl(), -1);
}

TEST(ClientTest, WatchResumesAfterTheServerRestartsWithoutGapOrRepeat) {
  TestServer server;
  auto client = Connect({server.endpoint()});
  Collector seen;
  etcdserverpb::WatchCreateRequest request;
  request.set_key("w/");
  request.set_range_end(PrefixEnd("w/"));
  auto watch = client->StartWatch(request, [&seen](const auto& r) { seen.Add(r); });
  ASSERT_TRUE(seen.WaitFor([](const auto& r) { return r.created(); }, absl::Seconds(5)));
  ASSERT_TRUE(client->Put("w/1", "a").ok());
  ASSERT_EQ(seen.WaitEvents(1).size(), 1u);
  server.Kill();
  server.Start();
  auto put2 = client->Put("w/2", "b");
  ASSERT_TRUE(put2.ok()) << put2.status();
  ASSERT_TRUE(client->Put("w/1", "c").ok());
  auto events = seen.WaitEvents(3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].kv().key(), "w/2");
  EXPECT_EQ(events[2].kv().value(), "c");
  EXPECT_LT(events[0].kv().mod_revision(), events[1].kv().mod_revision());
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(seen.WaitEvents(3).size(), 3u) << "no event is delivered twice";
  int created = 0;
  for (const auto& r : seen.responses()) created += r.created();
  EXPECT_EQ(created, 1) << "a resumed stream's re-creation is not shown to the handler";
}

TEST(ClientTest, LargeResponsesArriveInFragmentsAndAreJoined) {
  TestServer server({"--max-request-bytes=4096"});
  auto client = Connect({server.endpoint()});
  // A raw stream first, to see the fragments themselves.
  auto stub = etcdserverpb::Watch::NewStub(grpc::CreateChannel(server.endpoint(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = stub->Watch(&context);
  etcdserverpb::WatchRequest create;
  create.mutable_create_request()->set_key("f/");
  create.mutable_create_request()->set_range_end(PrefixEnd("f/"));
  create.mutable_create_request()->set_fragment(true);
  create.mutable_create_request()->set_prev_kv(true);
  ASSERT_TRUE(stream->Write(create));
  etcdserverpb::WatchResponse response;
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_TRUE(response.created());
  Collector joined;
  auto watch = client->StartWatch(create.create_request(), [&joined](const auto& r) { joined.Add(r); });
  ASSERT_TRUE(joined.WaitFor([](const auto& r) { return r.created(); }, absl::Seconds(5)));

  // One revision with 10 deletes, each carrying a 1000-byte previous value: about 10 KB of events,
  // more than 4096 bytes (each put alone fits).
  auto lease = client->LeaseGrant(60);
  ASSERT_TRUE(lease.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(client->Put("f/" + std::to_string(i), std::string(1000, 'x'), lease->id()).ok());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(stream->Read(&response));
    ASSERT_EQ(response.events_size(), 1);
  }
  ASSERT_TRUE(joined.WaitEvents(10).size() == 10);
  ASSERT_TRUE(client->LeaseRevoke(lease->id()).ok());
  int pieces = 0, events = 0;
  do {
    ASSERT_TRUE(stream->Read(&response));
    ++pieces;
    events += response.events_size();
    EXPECT_LE(response.ByteSizeLong(), 4096u + 1100u);
  } while (response.fragment());
  EXPECT_GE(pieces, 3);
  EXPECT_EQ(events, 10);
  auto got = joined.WaitEvents(20);
  EXPECT_EQ(got.size(), 20u);
  auto responses = joined.responses();
  ASSERT_FALSE(responses.empty());
  EXPECT_EQ(responses.back().events_size(), 10) << "the client library joins fragments into one response";
  for (const auto& r : responses) EXPECT_FALSE(r.fragment());
  context.TryCancel();
}

TEST(ClientTest, IdleWatchersGetProgressNotificationsWhenTheyAskForThem) {
  TestServer server({"--experimental-watch-progress-notify-interval=200ms"});
  auto client = Connect({server.endpoint()});
  ASSERT_TRUE(client->Put("other", "x").ok());
  Collector with, without;
  etcdserverpb::WatchCreateRequest request;
  request.set_key("p");
  auto quiet = client->StartWatch(request, [&without](const auto& r) { without.Add(r); });
  request.set_progress_notify(true);
  auto notified = client->StartWatch(request, [&with](const auto& r) { with.Add(r); });
  auto progress = [](const etcdserverpb::WatchResponse& r) {
    return !r.created() && !r.canceled() && r.events_size() == 0 && r.header().revision() > 0;
  };
  EXPECT_TRUE(with.WaitFor(progress, absl::Seconds(3)));
  EXPECT_FALSE(without.WaitFor(progress, absl::Milliseconds(600)));
  // The notification carries the current revision, and the watch resumes from after it.
  auto put = client->Put("other", "y");
  ASSERT_TRUE(put.ok());
  EXPECT_TRUE(with.WaitFor([&](const auto& r) { return progress(r) && r.header().revision() == put->header().revision(); },
                           absl::Seconds(3)));
}

TEST(ClientTest, ACompactedStartRevisionEndsTheWatchAsEtcdReportsIt) {
  TestServer server;
  auto client = Connect({server.endpoint()});
  auto first = client->Put("c", "1");
  ASSERT_TRUE(client->Put("c", "2").ok());
  ASSERT_TRUE(client->Put("c", "3").ok());
  auto stub = etcdserverpb::KV::NewStub(grpc::CreateChannel(server.endpoint(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(first->header().revision() + 2);
  etcdserverpb::CompactionResponse compacted;
  ASSERT_TRUE(stub->Compact(&context, compact, &compacted).ok());
  Collector seen;
  etcdserverpb::WatchCreateRequest request;
  request.set_key("c");
  request.set_start_revision(first->header().revision());
  auto watch = client->StartWatch(request, [&seen](const auto& r) { seen.Add(r); });
  EXPECT_EQ(watch->Wait().code(), absl::StatusCode::kOutOfRange);
  auto responses = seen.responses();
  ASSERT_FALSE(responses.empty());
  EXPECT_TRUE(responses.back().canceled());
  EXPECT_EQ(responses.back().compact_revision(), first->header().revision() + 2);
}

}  // namespace
}  // namespace leasehold
