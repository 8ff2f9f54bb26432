#include "tests/faults/compaction_check.h"

#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/faults/safety_checkers.h"
#include "tests/faults/watch_calls.h"

namespace leasehold::faults {
namespace {

constexpr char kCompactedMessage[] = "etcdserver: mvcc: required revision has been compacted";

void Deadline(grpc::ClientContext* context, double seconds) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
}

// What one watch from `start` brought until its events or a progress notification reached
// `target`: the events, or the compact revision it was cancelled with (then no events).
struct Watched {
  bool complete = false;
  int64_t compact_revision = 0;
  std::vector<WatchedEvent> events;
};

Watched WatchUntil(etcdserverpb::Watch::Stub* watch, int64_t start, int64_t target) {
  Watched out;
  grpc::ClientContext context;
  Deadline(&context, 20);
  auto stream = watch->Watch(&context);
  if (stream->Write(WatchEverything(start)) && stream->Write(ProgressRequest())) {
    etcdserverpb::WatchResponse response;
    while (!out.complete && stream->Read(&response)) {
      if (response.canceled()) {
        out.compact_revision = response.compact_revision();
        out.complete = true;
        break;
      }
      for (const auto& e : response.events()) out.events.push_back(ToWatchedEvent(e));
      const bool notified = response.events_size() == 0 && !response.created();
      out.complete = (!out.events.empty() && out.events.back().revision >= target) ||
                     (notified && response.header().revision() >= target);
    }
  }
  context.TryCancel();
  (void)stream->Finish();
  return out;
}

}  // namespace

CompactionCheck CheckCompaction(const std::vector<std::string>& endpoints,
                                const std::vector<WatchedEvent>& history) {
  CompactionCheck check;
  if (history.size() < 4) return check;
  const int64_t c = history[history.size() / 2].revision;
  const int64_t target = history.back().revision;
  std::map<std::string, std::string> state_at_c;
  for (const WatchedEvent& e : history) {
    if (e.revision > c) break;
    if (e.put)
      state_at_c[e.key] = e.value;
    else
      state_at_c.erase(e.key);
  }
  std::vector<std::unique_ptr<etcdserverpb::KV::Stub>> kv;
  std::vector<std::unique_ptr<etcdserverpb::Watch::Stub>> watch;
  for (const std::string& e : endpoints) {
    auto channel = grpc::CreateChannel(e, grpc::InsecureChannelCredentials());
    kv.push_back(etcdserverpb::KV::NewStub(channel));
    watch.push_back(etcdserverpb::Watch::NewStub(channel));
  }
  bool compacted = false;
  for (size_t attempt = 0; attempt < 3 * kv.size() && !compacted; ++attempt) {
    grpc::ClientContext context;
    Deadline(&context, 10);
    etcdserverpb::CompactionRequest request;
    request.set_revision(c);
    request.set_physical(true);
    etcdserverpb::CompactionResponse response;
    compacted = kv[attempt % kv.size()]->Compact(&context, request, &response).ok();
    if (!compacted) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (!compacted) {
    check.anomalies.push_back(absl::StrCat("no member compacted at revision ", c));
    return check;
  }
  check.revision = c;
  for (size_t i = 0; i < kv.size(); ++i) {
    const std::string member = absl::StrCat("m", i + 1);
    const size_t before = check.anomalies.size();
    {
      grpc::ClientContext context;
      Deadline(&context, 10);
      etcdserverpb::RangeRequest below;
      below.set_key(std::string(1, '\0'));
      below.set_range_end(std::string(1, '\0'));
      below.set_revision(c - 1);
      below.set_limit(1);
      etcdserverpb::RangeResponse response;
      const grpc::Status st = kv[i]->Range(&context, below, &response);
      if (st.error_code() != grpc::StatusCode::OUT_OF_RANGE ||
          st.error_message() != kCompactedMessage) {
        check.anomalies.push_back(absl::StrFormat(
            "%s: a range at compacted revision %d answered code %d \"%s\", not OutOfRange \"%s\"",
            member, c - 1, st.error_code(), st.error_message(), kCompactedMessage));
      }
    }
    {
      grpc::ClientContext context;
      Deadline(&context, 10);
      etcdserverpb::RangeRequest at;
      at.set_key(std::string(1, '\0'));
      at.set_range_end(std::string(1, '\0'));
      at.set_revision(c);
      etcdserverpb::RangeResponse response;
      const grpc::Status st = kv[i]->Range(&context, at, &response);
      std::map<std::string, std::string> found;
      for (const auto& item : response.kvs()) found[item.key()] = item.value();
      if (!st.ok() || found != state_at_c) {
        check.anomalies.push_back(absl::StrFormat(
            "%s: a range at revision %d (%s) found %d keys where the history leaves %d", member, c,
            st.ok() ? "ok" : st.error_message(), found.size(), state_at_c.size()));
      }
    }
    const Watched cancelled = WatchUntil(watch[i].get(), c - 1, target);
    if (cancelled.compact_revision != c || !cancelled.events.empty()) {
      check.anomalies.push_back(absl::StrFormat(
          "%s: a watch from compacted revision %d brought %d events and compact_revision %d, "
          "not a cancellation with compact_revision %d",
          member, c - 1, cancelled.events.size(), cancelled.compact_revision, c));
    }
    const Watched after = WatchUntil(watch[i].get(), c + 1, target);
    std::vector<WatchedEvent> expected;
    for (const WatchedEvent& e : history) {
      if (e.revision > c) expected.push_back(e);
    }
    size_t matching = 0;
    while (matching < expected.size() && matching < after.events.size() &&
           SameEvent(expected[matching], after.events[matching])) {
      ++matching;
    }
    if (!after.complete || matching != expected.size() || after.events.size() != expected.size()) {
      check.anomalies.push_back(absl::StrFormat(
          "%s: a watch from revision %d after the compaction brought %d events (%s), the first "
          "%d as the history has them, where the history has %d",
          member, c + 1, after.events.size(), after.complete ? "complete" : "incomplete", matching,
          expected.size()));
    }
    if (check.anomalies.size() == before) ++check.members;
  }
  return check;
}

}  // namespace leasehold::faults
