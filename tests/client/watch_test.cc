// leasehold::Client's KV, endpoint failover and Watch (resume, fragments, progress) against a real
// server.
#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include <grpcpp/grpcpp.h>
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
  bool WaitFor(const std::function<bool(const etcdserverpb::WatchResponse&)>& pred,
               absl::Duration timeout) {
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

// A Watch stream of the generated stub, to see the server's responses exactly as sent. A server
// that misbehaves fails the test rather than leaving a read waiting forever.
struct RawWatchStream {
  explicit RawWatchStream(const std::string& endpoint)
      : stub(etcdserverpb::Watch::NewStub(
            grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()))) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    stream = stub->Watch(&context);
  }
  ~RawWatchStream() { context.TryCancel(); }

  // Sends a create request for (key, range_end) under `watch_id` (0: the server picks one).
  bool Create(const std::string& key, const std::string& range_end, int64_t watch_id) {
    etcdserverpb::WatchRequest request;
    request.mutable_create_request()->set_key(key);
    request.mutable_create_request()->set_range_end(range_end);
    request.mutable_create_request()->set_watch_id(watch_id);
    return stream->Write(request);
  }

  std::unique_ptr<etcdserverpb::Watch::Stub> stub;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>>
      stream;
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
  // etcd fragments a response once it reaches --max-request-bytes plus its 512 KiB allowance for
  // gRPC's framing.
  constexpr size_t kMaxRequestBytes = 65536;
  constexpr size_t kLimit = kMaxRequestBytes + 512 * 1024;
  constexpr size_t kValueBytes = 60000;
  TestServer server({"--max-request-bytes=" + std::to_string(kMaxRequestBytes)});
  auto client = Connect({server.endpoint()});
  // A raw stream first, to see the fragments themselves.
  RawWatchStream raw(server.endpoint());
  auto& stream = raw.stream;
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
  auto watch =
      client->StartWatch(create.create_request(), [&joined](const auto& r) { joined.Add(r); });
  ASSERT_TRUE(joined.WaitFor([](const auto& r) { return r.created(); }, absl::Seconds(5)));

  // One revision with 12 deletes, each carrying a 60,000-byte previous value: about 720 KB of
  // events, past the limit (each put alone is well under it).
  constexpr int kKeys = 12;
  auto lease = client->LeaseGrant(60);
  ASSERT_TRUE(lease.ok());
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(
        client->Put("f/" + std::to_string(i), std::string(kValueBytes, 'x'), lease->id()).ok());
  }
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(stream->Read(&response));
    ASSERT_EQ(response.events_size(), 1);
    EXPECT_FALSE(response.fragment());
  }
  ASSERT_TRUE(joined.WaitEvents(kKeys).size() == kKeys);
  ASSERT_TRUE(client->LeaseRevoke(lease->id()).ok());
  int pieces = 0, events = 0;
  do {
    ASSERT_TRUE(stream->Read(&response));
    ++pieces;
    events += response.events_size();
    // Under the limit, but for the event that took it there.
    EXPECT_LT(response.ByteSizeLong(), kLimit + kValueBytes + 100);
    if (response.fragment()) {
      EXPECT_GE(response.ByteSizeLong() + 2 * kValueBytes, kLimit);
    }
  } while (response.fragment());
  EXPECT_EQ(pieces, 2);
  EXPECT_EQ(events, kKeys);
  auto got = joined.WaitEvents(2 * kKeys);
  EXPECT_EQ(got.size(), 2u * kKeys);
  auto responses = joined.responses();
  ASSERT_FALSE(responses.empty());
  EXPECT_EQ(responses.back().events_size(), kKeys)
      << "the client library joins fragments into one response";
  for (const auto& r : responses) EXPECT_FALSE(r.fragment());
}

// A write's events are encoded once and shared by every watcher that matches all of them; each
// response must still read as that watcher's own: its watch id (small or large), the header of the
// write's revision, prev_kv only when asked for. Watchers that match some of the events (filters,
// a single key) get just those.
TEST(ClientTest, WatchersOfOneWriteEachGetTheirOwnViewOfIt) {
  TestServer server;
  auto client = Connect({server.endpoint()});
  ASSERT_TRUE(client->Put("s/a", "1").ok());
  ASSERT_TRUE(client->Put("s/b", "x").ok());
  RawWatchStream one(server.endpoint()), two(server.endpoint());
  constexpr int64_t kLargeId = int64_t{1} << 40;
  struct Want {
    RawWatchStream* stream;
    int64_t id;
    bool prev_kv;
    int filter;  // -1: none
    std::string key, range_end;
  };
  const std::vector<Want> watchers = {
      {&one, 0, true, -1, "s/", PrefixEnd("s/")},          // everything, with prev_kv
      {&one, kLargeId, false, -1, "s/", PrefixEnd("s/")},  // everything, without
      {&one, 7, false, etcdserverpb::WatchCreateRequest::NOPUT, "s/b", ""},  // the delete only
      {&one, 8, true, etcdserverpb::WatchCreateRequest::NODELETE, "s/",
       PrefixEnd("s/")},                           // the put only
      {&two, 0, true, -1, "s/", PrefixEnd("s/")},  // another stream: its own header
  };
  for (const Want& w : watchers) {
    etcdserverpb::WatchRequest create;
    auto* c = create.mutable_create_request();
    c->set_key(w.key);
    c->set_range_end(w.range_end);
    c->set_watch_id(w.id);
    c->set_prev_kv(w.prev_kv);
    if (w.filter >= 0)
      c->add_filters(static_cast<etcdserverpb::WatchCreateRequest::FilterType>(w.filter));
    ASSERT_TRUE(w.stream->stream->Write(create));
    etcdserverpb::WatchResponse created;
    ASSERT_TRUE(w.stream->stream->Read(&created));
    ASSERT_TRUE(created.created());
    EXPECT_EQ(created.watch_id(), w.id);
  }
  // One revision: s/a changes, s/b goes.
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key("s/a");
  put->set_value("2");
  txn.add_success()->mutable_request_delete_range()->set_key("s/b");
  auto written = client->Txn(txn);
  ASSERT_TRUE(written.ok()) << written.status();
  const int64_t revision = written->header().revision();

  // A stream's watchers are served in no particular order: read all, then look each one up.
  std::map<std::pair<RawWatchStream*, int64_t>, etcdserverpb::WatchResponse> got;
  for (size_t i = 0; i < watchers.size(); ++i) {
    etcdserverpb::WatchResponse r;
    RawWatchStream* stream = i < 4 ? &one : &two;
    ASSERT_TRUE(stream->stream->Read(&r));
    EXPECT_TRUE(got.emplace(std::make_pair(stream, r.watch_id()), r).second)
        << "one response per watcher";
  }
  for (const Want& w : watchers) {
    ASSERT_TRUE(got.count({w.stream, w.id}));
    const etcdserverpb::WatchResponse& r = got[{w.stream, w.id}];
    SCOPED_TRACE("watch " + std::to_string(w.id) + " on " + w.key);
    EXPECT_EQ(r.watch_id(), w.id);
    EXPECT_EQ(r.header().revision(), revision);
    EXPECT_EQ(r.header().cluster_id(), written->header().cluster_id());
    EXPECT_EQ(r.header().member_id(), written->header().member_id());
    EXPECT_EQ(r.header().raft_term(), written->header().raft_term());
    EXPECT_FALSE(r.created() || r.canceled() || r.fragment());
    std::vector<std::string> seen;
    for (const auto& e : r.events()) {
      EXPECT_EQ(e.kv().mod_revision(), revision);
      EXPECT_EQ(e.has_prev_kv(), w.prev_kv);
      if (e.type() == mvccpb::Event::PUT) {
        seen.push_back("PUT " + e.kv().key() + "=" + e.kv().value());
        if (w.prev_kv) {
          EXPECT_EQ(e.prev_kv().value(), "1");
        }
      } else {
        seen.push_back("DELETE " + e.kv().key());
        if (w.prev_kv) {
          EXPECT_EQ(e.prev_kv().value(), "x");
        }
      }
    }
    std::vector<std::string> expected;
    if (w.filter != etcdserverpb::WatchCreateRequest::NOPUT) expected.push_back("PUT s/a=2");
    if (w.filter != etcdserverpb::WatchCreateRequest::NODELETE) expected.push_back("DELETE s/b");
    EXPECT_EQ(seen, expected);
    // Exactly what a response built field by field would be: one header, nothing unknown.
    etcdserverpb::WatchResponse rebuilt;
    rebuilt.set_watch_id(r.watch_id());
    *rebuilt.mutable_header() = r.header();
    *rebuilt.mutable_events() = r.events();
    EXPECT_EQ(r.ByteSizeLong(), rebuilt.ByteSizeLong());
  }
}

// Every kind of range a client can send (single key, prefix, from-key, any other range, all keys)
// hears exactly its keys' events, and a cancelled watcher nothing, also after its id is reused for
// another range: the hub finds watchers through an index by range, not by testing each one.
TEST(ClientTest, EachKindOfRangeHearsExactlyItsKeys) {
  TestServer server;
  auto client = Connect({server.endpoint()});
  RawWatchStream raw(server.endpoint());
  const std::string kFromKey("\0", 1);
  auto create = [&](int64_t id, const std::string& key, const std::string& range_end) {
    ASSERT_TRUE(raw.Create(key, range_end, id));
    etcdserverpb::WatchResponse created;
    ASSERT_TRUE(raw.stream->Read(&created));
    ASSERT_TRUE(created.created());
    ASSERT_EQ(created.watch_id(), id);
  };
  auto cancel = [&](int64_t id) {
    etcdserverpb::WatchRequest request;
    request.mutable_cancel_request()->set_watch_id(id);
    ASSERT_TRUE(raw.stream->Write(request));
    etcdserverpb::WatchResponse cancelled;
    ASSERT_TRUE(raw.stream->Read(&cancelled));
    ASSERT_TRUE(cancelled.canceled());
    ASSERT_EQ(cancelled.watch_id(), id);
  };
  // Writes `keys` in one revision and returns, by watch id, the keys each response carried.
  auto write = [&](const std::vector<std::string>& keys, size_t responses) {
    etcdserverpb::TxnRequest txn;
    for (const auto& key : keys) {
      auto* put = txn.add_success()->mutable_request_put();
      put->set_key(key);
      put->set_value("v");
    }
    EXPECT_TRUE(client->Txn(txn).ok());
    std::map<int64_t, std::vector<std::string>> heard;
    for (size_t i = 0; i < responses; ++i) {
      etcdserverpb::WatchResponse r;
      if (!raw.stream->Read(&r)) break;
      auto& keys_heard = heard[r.watch_id()];
      EXPECT_TRUE(keys_heard.empty()) << "watch " << r.watch_id() << " got two responses";
      for (const auto& e : r.events()) keys_heard.push_back(e.kv().key());
    }
    return heard;
  };
  using Heard = std::map<int64_t, std::vector<std::string>>;
  create(1, "k/b", "");
  create(2, "k/", PrefixEnd("k/"));
  create(3, "k/c", kFromKey);
  create(4, "k/a", "k/c");
  create(5, kFromKey, kFromKey);
  create(6, "k/", PrefixEnd("k/"));
  cancel(6);
  EXPECT_EQ(write({"k/a", "k/b", "k/c", "k/d", "x"}, 5),
            (Heard{{1, {"k/b"}},
                   {2, {"k/a", "k/b", "k/c", "k/d"}},
                   {3, {"k/c", "k/d", "x"}},
                   {4, {"k/a", "k/b"}},
                   {5, {"k/a", "k/b", "k/c", "k/d", "x"}}}));
  // Id 6 again, on one key nobody else watches alone; the prefix watcher that had it stays gone.
  create(6, "zz", "");
  EXPECT_EQ(write({"zz"}, 3), (Heard{{3, {"zz"}}, {5, {"zz"}}, {6, {"zz"}}}));
  cancel(2);
  EXPECT_EQ(write({"k/b"}, 3), (Heard{{1, {"k/b"}}, {4, {"k/b"}}, {5, {"k/b"}}}));
  // Alone in its revision (a watcher found through one key gets all of a revision's that it holds),
  // the first key of a from-key range and the end of another.
  EXPECT_EQ(write({"k/c"}, 2), (Heard{{3, {"k/c"}}, {5, {"k/c"}}}));
  // A stray response to any earlier write would come before these.
  EXPECT_EQ(write({"y"}, 2), (Heard{{3, {"y"}}, {5, {"y"}}}));
}

// Many streams watch one prefix while writes go on, some opened from a past revision in the middle
// of it: each stream gets every event once, in revision order, whichever way the server reaches it
// (live fan-out, the streams it serves before answering the writer, or replay from history).
TEST(ClientTest, EveryStreamGetsEachEventOnceInOrderWhileStreamsJoin) {
  TestServer server;
  auto client = Connect({server.endpoint()});
  auto first = client->Put("f/first", "0");
  ASSERT_TRUE(first.ok()) << first.status();
  constexpr int kPuts = 300;
  constexpr int kEarly = 10, kLate = 6;
  std::vector<std::unique_ptr<RawWatchStream>> streams;
  std::vector<std::vector<int64_t>> revisions(kEarly + kLate);
  std::vector<std::thread> readers;
  auto open = [&](int i, int64_t start_revision) {
    streams.push_back(std::make_unique<RawWatchStream>(server.endpoint()));
    etcdserverpb::WatchRequest create;
    create.mutable_create_request()->set_key("f/");
    create.mutable_create_request()->set_range_end(PrefixEnd("f/"));
    create.mutable_create_request()->set_start_revision(start_revision);
    ASSERT_TRUE(streams.back()->stream->Write(create));
    etcdserverpb::WatchResponse created;
    ASSERT_TRUE(streams.back()->stream->Read(&created));
    ASSERT_TRUE(created.created());
    readers.emplace_back(
        [stream = streams.back().get(), seen = &revisions[static_cast<size_t>(i)]] {
          etcdserverpb::WatchResponse r;
          while (seen->size() < static_cast<size_t>(kPuts + 1) && stream->stream->Read(&r)) {
            for (const auto& e : r.events()) seen->push_back(e.kv().mod_revision());
          }
        });
  };
  for (int i = 0; i < kEarly; ++i) open(i, first->header().revision());
  std::thread writer([&] {
    for (int n = 0; n < kPuts; ++n)
      ASSERT_TRUE(client->Put("f/" + std::to_string(n % 7), std::to_string(n)).ok());
  });
  for (int i = kEarly; i < kEarly + kLate; ++i) {
    absl::SleepFor(absl::Milliseconds(20));
    open(i, first->header().revision());
  }
  writer.join();
  for (auto& t : readers) t.join();
  for (size_t i = 0; i < revisions.size(); ++i) {
    ASSERT_EQ(revisions[i].size(), static_cast<size_t>(kPuts + 1)) << "stream " << i;
    for (size_t j = 0; j < revisions[i].size(); ++j) {
      EXPECT_EQ(revisions[i][j], first->header().revision() + static_cast<int64_t>(j))
          << "stream " << i;
    }
  }
}

// Watch streams live on queues of the server's own (StreamQueues), which must outlast every
// stream's last operation: stopping the server while its streams are open and being written to ends
// them all and exits cleanly, not with gRPC's abort for an operation started on a queue already
// shut down.
TEST(ClientTest, AServerStopsCleanlyWhileItsWatchStreamsAreBusy) {
  TestServer server;
  auto client = Connect({server.endpoint()});
  constexpr int kStreams = 64;
  std::vector<std::unique_ptr<RawWatchStream>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<RawWatchStream>(server.endpoint()));
    ASSERT_TRUE(streams.back()->Create("busy/", PrefixEnd("busy/"), 0));
    etcdserverpb::WatchResponse created;
    ASSERT_TRUE(streams.back()->stream->Read(&created));
    ASSERT_TRUE(created.created());
  }
  std::atomic<bool> stop_writing{false};
  std::thread writer([&] {
    for (int n = 0; !stop_writing.load(); ++n) {
      if (!client->Put("busy/" + std::to_string(n % 5), std::string(512, 'v')).ok()) break;
    }
  });
  etcdserverpb::WatchResponse event;
  ASSERT_TRUE(streams.front()->stream->Read(&event));  // writes are fanning out
  EXPECT_EQ(server.Stop(/*timeout_ms=*/15000), 0);
  stop_writing = true;
  writer.join();
  for (int i = 0; i < kStreams; ++i) {
    etcdserverpb::WatchResponse r;
    while (streams[static_cast<size_t>(i)]->stream->Read(&r)) {
    }
    EXPECT_FALSE(streams[static_cast<size_t>(i)]->stream->Finish().ok()) << "stream " << i;
  }
}

// A stream its client resets at once is taken by the server only after the reset, so its end (the
// done notification, on one of the streams' queues) can come while the thread that took it is still
// making its handler: the server must neither crash nor leak such streams (Stop waits for every
// stream to be gone). The pauses let the server's looks for new calls space out to their longest,
// so that each look takes a batch of calls already reset: without them the crash showed in about
// one run in five, with them in every run.
TEST(ClientTest, StreamsResetAsSoonAsOpenedLeaveTheServerServing) {
  TestServer server;
  auto channel = grpc::CreateChannel(server.endpoint(), grpc::InsecureChannelCredentials());
  auto stub = etcdserverpb::Watch::NewStub(channel);
  std::vector<std::thread> openers;
  for (int t = 0; t < 4; ++t) {
    openers.emplace_back([&] {
      for (int i = 0; i < 1500; ++i) {
        if (i % 30 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        grpc::ClientContext context;
        auto stream = stub->Watch(&context);
        etcdserverpb::WatchRequest request;
        request.mutable_create_request()->set_key("reset/");
        stream->Write(request);
        context.TryCancel();
        stream->Finish().IgnoreError();
      }
    });
  }
  for (auto& t : openers) t.join();
  // Still serving, watches included.
  auto client = Connect({server.endpoint()});
  RawWatchStream watch(server.endpoint());
  ASSERT_TRUE(watch.Create("after/", PrefixEnd("after/"), 0));
  etcdserverpb::WatchResponse created;
  ASSERT_TRUE(watch.stream->Read(&created));
  ASSERT_TRUE(created.created());
  ASSERT_TRUE(client->Put("after/k", "v").ok());
  etcdserverpb::WatchResponse event;
  ASSERT_TRUE(watch.stream->Read(&event));
  ASSERT_EQ(event.events_size(), 1);
  EXPECT_EQ(server.Stop(/*timeout_ms=*/15000), 0);
}

// More watchers on one stream than it queues responses for (1,024): each write watched by all of
// them fills the stream, and the watchers it refused are caught up from history while more writes
// come, each from wherever it was left and with its own view (prev_kv, filters, range). Each still
// gets every event it watches once, in revision order, exactly as it asked for it.
TEST(ClientTest, WatchersOfOneFullStreamAreCaughtUpEachWithItsOwnView) {
  TestServer server;
  auto client = Connect({server.endpoint()});
  ASSERT_TRUE(client->Put("q/k", "0").ok());
  RawWatchStream raw(server.endpoint());
  constexpr int kWatchers = 3000;
  constexpr int kKinds = 4;  // watcher i is of kind i % kKinds
  for (int i = 0; i < kWatchers; ++i) {
    etcdserverpb::WatchRequest create;
    auto* c = create.mutable_create_request();
    c->set_watch_id(i + 1);
    c->set_key(i % kKinds == 3 ? "q/k" : "q/");
    if (i % kKinds != 3) c->set_range_end(PrefixEnd("q/"));
    c->set_prev_kv(i % kKinds == 1 || i % kKinds == 3);
    if (i % kKinds == 2) c->add_filters(etcdserverpb::WatchCreateRequest::NOPUT);
    ASSERT_TRUE(raw.stream->Write(create));
    etcdserverpb::WatchResponse created;
    ASSERT_TRUE(raw.stream->Read(&created));
    ASSERT_TRUE(created.created());
    ASSERT_EQ(created.watch_id(), i + 1);
  }
  // Four revisions, written while the stream is still full of the earlier ones.
  std::vector<int64_t> rev;
  for (auto* op : {"put q/k 1", "put q/j 1", "del q/k", "put q/k 2"}) {
    const std::string s = op;
    if (s.rfind("put ", 0) == 0) {
      auto put = client->Put(s.substr(4, 3), s.substr(8));
      ASSERT_TRUE(put.ok()) << put.status();
      rev.push_back(put->header().revision());
    } else {
      auto del = client->Delete(s.substr(4, 3));
      ASSERT_TRUE(del.ok()) << del.status();
      rev.push_back(del->header().revision());
    }
  }
  auto r = [&rev](int n) { return "@" + std::to_string(rev[static_cast<size_t>(n)]) + " "; };
  const std::vector<std::string> expected[kKinds] = {
      {r(0) + "PUT q/k=1", r(1) + "PUT q/j=1", r(2) + "DELETE q/k", r(3) + "PUT q/k=2"},
      {r(0) + "PUT q/k=1 prev=0", r(1) + "PUT q/j=1", r(2) + "DELETE q/k prev=1",
       r(3) + "PUT q/k=2"},
      {r(2) + "DELETE q/k"},
      {r(0) + "PUT q/k=1 prev=0", r(2) + "DELETE q/k prev=1", r(3) + "PUT q/k=2"},
  };
  size_t want_total = 0;
  for (int i = 0; i < kWatchers; ++i) want_total += expected[i % kKinds].size();

  std::map<int64_t, std::vector<std::string>> seen;
  size_t total = 0;
  etcdserverpb::WatchResponse response;
  while (total < want_total && raw.stream->Read(&response)) {
    ASSERT_FALSE(response.created() || response.canceled()) << response.ShortDebugString();
    for (const auto& e : response.events()) {
      EXPECT_LE(e.kv().mod_revision(), response.header().revision());
      std::string line =
          "@" + std::to_string(e.kv().mod_revision()) + " " +
          (e.type() == mvccpb::Event::PUT ? "PUT " + e.kv().key() + "=" + e.kv().value()
                                          : "DELETE " + e.kv().key());
      if (e.has_prev_kv()) line += " prev=" + e.prev_kv().value();
      seen[response.watch_id()].push_back(line);
      ++total;
    }
  }
  ASSERT_EQ(total, want_total);
  for (int i = 0; i < kWatchers; ++i) {
    ASSERT_EQ(seen[i + 1], expected[i % kKinds]) << "watcher " << i + 1;
  }
}

TEST(ClientTest, AStreamThatFallsBehindJoinsEachWatchersLaterEventsIntoOneResponse) {
  TestServer server;
  auto client = Connect({server.endpoint()});
  RawWatchStream raw(server.endpoint());
  constexpr int kWatchers = 40;
  constexpr int kPuts = 20;
  for (int i = 0; i < kWatchers; ++i) {
    ASSERT_TRUE(raw.Create("j/", PrefixEnd("j/"), i + 1));
    etcdserverpb::WatchResponse created;
    ASSERT_TRUE(raw.stream->Read(&created));
    ASSERT_TRUE(created.created());
  }
  // A MiB for each watcher, 40 MiB in all, which no flow-control window takes while the client
  // reads nothing: the stream stays behind through the small puts.
  ASSERT_TRUE(client->Put("j/big", std::string(1 << 20, 'x')).ok());
  std::vector<std::string> expected = {"PUT j/big"};
  for (int i = 0; i < kPuts; ++i) {
    ASSERT_TRUE(client->Put("j/k", std::to_string(i)).ok());
    expected.push_back("PUT j/k=" + std::to_string(i));
  }
  std::map<int64_t, std::vector<std::string>> seen;
  std::map<int64_t, int64_t> last_revision;
  size_t total = 0;
  int small_responses = 0;
  etcdserverpb::WatchResponse response;
  while (total < static_cast<size_t>(kWatchers) * expected.size() && raw.stream->Read(&response)) {
    ASSERT_FALSE(response.created() || response.canceled()) << response.ShortDebugString();
    if (response.events_size() > 0 && response.events(0).kv().key() == "j/k") ++small_responses;
    for (const auto& e : response.events()) {
      EXPECT_LE(e.kv().mod_revision(), response.header().revision());
      EXPECT_GT(e.kv().mod_revision(), last_revision[response.watch_id()]);
      last_revision[response.watch_id()] = e.kv().mod_revision();
      seen[response.watch_id()].push_back(e.kv().key() == "j/big" ? "PUT j/big"
                                                                  : "PUT j/k=" + e.kv().value());
      ++total;
    }
  }
  for (int i = 0; i < kWatchers; ++i) ASSERT_EQ(seen[i + 1], expected) << "watcher " << i + 1;
  // Each watcher's small events joined the one response queued behind its big one: 40 responses,
  // against 800 with a response per event.
  EXPECT_LE(small_responses, 2 * kWatchers);
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
  EXPECT_TRUE(with.WaitFor(
      [&](const auto& r) {
        return progress(r) && r.header().revision() == put->header().revision();
      },
      absl::Seconds(3)));
}

// etcd runs a progress ticker per stream, started when the stream opens: a watch made on a new
// stream hears nothing for at least the interval, however long the server has been up.
TEST(ClientTest, ANewStreamsFirstProgressNotificationComesAnIntervalAfterItOpened) {
  TestServer server({"--experimental-watch-progress-notify-interval=1s"});
  // Half an interval after the server began: a ticker shared by every stream and started with the
  // server would fire about half an interval after this stream opened.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  RawWatchStream raw(server.endpoint());
  const auto opened = std::chrono::steady_clock::now();
  etcdserverpb::WatchRequest request;
  request.mutable_create_request()->set_key("p");
  request.mutable_create_request()->set_progress_notify(true);
  ASSERT_TRUE(raw.stream->Write(request));
  etcdserverpb::WatchResponse response;
  ASSERT_TRUE(raw.stream->Read(&response));
  ASSERT_TRUE(response.created()) << response.ShortDebugString();
  for (int notification = 1; notification <= 2; ++notification) {
    ASSERT_TRUE(raw.stream->Read(&response));
    const auto elapsed = std::chrono::steady_clock::now() - opened;
    EXPECT_TRUE(response.events_size() == 0 && !response.created() && !response.canceled())
        << response.ShortDebugString();
    // The period is the interval plus up to a tenth of it; the upper bound leaves room for a slow
    // host.
    EXPECT_GE(elapsed, notification * std::chrono::milliseconds(1000))
        << "notification " << notification;
    EXPECT_LT(elapsed,
              notification * std::chrono::milliseconds(1100) + std::chrono::milliseconds(1500))
        << "notification " << notification;
  }
}

TEST(ClientTest, ACompactedStartRevisionEndsTheWatchAsEtcdReportsIt) {
  TestServer server;
  auto client = Connect({server.endpoint()});
  auto first = client->Put("c", "1");
  ASSERT_TRUE(client->Put("c", "2").ok());
  ASSERT_TRUE(client->Put("c", "3").ok());
  auto stub = etcdserverpb::KV::NewStub(
      grpc::CreateChannel(server.endpoint(), grpc::InsecureChannelCredentials()));
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
  EXPECT_EQ(responses.back().header().revision(), 0)
      << "etcd's compaction cancel names no revision";
}

// What etcd does with create requests it cannot or will not serve as they are.
TEST(ClientTest, CreateRequestsAreRefusedOrReadAsEtcdDoes) {
  TestServer server;
  RawWatchStream raw(server.endpoint());
  auto& stream = raw.stream;
  etcdserverpb::WatchResponse response;
  // A range that selects nothing: refused as watch -1, and no id is used up.
  ASSERT_TRUE(raw.Create("z", "b", 0));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_TRUE(response.created());
  EXPECT_TRUE(response.canceled());
  EXPECT_EQ(response.watch_id(), -1);
  EXPECT_EQ(response.cancel_reason(), "mvcc: watcher range is empty");
  // "\0" as range end is "every key from this one on", not an empty range.
  ASSERT_TRUE(raw.Create("z", std::string(1, '\0'), 0));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_FALSE(response.canceled());
  EXPECT_EQ(response.watch_id(), 0);
  // A watch id in use: refused as watch -1, so the live watcher is not taken for cancelled.
  ASSERT_TRUE(raw.Create("q", "", 5));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.watch_id(), 5);
  ASSERT_TRUE(raw.Create("q", "", 5));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_TRUE(response.canceled());
  EXPECT_EQ(response.watch_id(), -1);
  EXPECT_EQ(response.cancel_reason(), "mvcc: duplicate watch ID provided on the WatchStream");
  // An empty key is the smallest key, "\0".
  ASSERT_TRUE(raw.Create("", "", 0));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_FALSE(response.canceled());
  const int64_t smallest_key_watch = response.watch_id();
  EXPECT_EQ(smallest_key_watch, 1);
  auto client = Connect({server.endpoint()});
  ASSERT_TRUE(client->Put(std::string(1, '\0'), "x").ok());
  // Only the empty key's watcher sees it: the others watch "q" and the keys from "z" on.
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.watch_id(), smallest_key_watch);
  ASSERT_EQ(response.events_size(), 1);
  EXPECT_EQ(response.events(0).kv().key(), std::string(1, '\0'));
}

// A watcher catching up on a long history gets it in responses of at most 1000 revisions, as from
// etcd, so a client with gRPC's default 4 MiB receive limit can follow it.
TEST(ClientTest, ALongHistoryIsReplayedInResponsesOfAtMostAThousandRevisions) {
  TestServer server;
  auto client = Connect({server.endpoint()});
  auto first = client->Put("h", "0");
  ASSERT_TRUE(first.ok());
  for (int i = 1; i < 1500; ++i) ASSERT_TRUE(client->Put("h", std::to_string(i)).ok());
  RawWatchStream raw(server.endpoint());
  auto& stream = raw.stream;
  etcdserverpb::WatchRequest request;
  request.mutable_create_request()->set_key("h");
  request.mutable_create_request()->set_start_revision(first->header().revision());
  ASSERT_TRUE(stream->Write(request));
  etcdserverpb::WatchResponse response;
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_TRUE(response.created());
  std::vector<int> sizes;
  int64_t next = first->header().revision();
  while (next < first->header().revision() + 1500 && stream->Read(&response)) {
    sizes.push_back(response.events_size());
    for (const auto& e : response.events()) EXPECT_EQ(e.kv().mod_revision(), next++);
  }
  EXPECT_EQ(sizes, (std::vector<int>{1000, 500}));
}

}  // namespace
}  // namespace leasehold
