#include "tests/faults/workloads.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/common/keep_alive_once.h"
#include "tests/faults/safety_checkers.h"
#include "tests/faults/watch_calls.h"
#include "v3lockpb/v3lock.grpc.pb.h"

namespace leasehold::faults {

class Members {
 public:
  explicit Members(const std::vector<std::string>& endpoints) {
    for (const std::string& e : endpoints) {
      grpc::ChannelArguments args;
      // Reconnect quickly after a member comes back: faults restart members every few seconds.
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
      // ... and give up on a connection attempt after 1 s (gRPC waits 20 s by default): a paused
      // or unreachable member must not hold its channel for longer than a fault lasts.
      args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
      auto channel = grpc::CreateCustomChannel(e, grpc::InsecureChannelCredentials(), args);
      kv.push_back(etcdserverpb::KV::NewStub(channel));
      lease.push_back(etcdserverpb::Lease::NewStub(channel));
      lock.push_back(v3lockpb::Lock::NewStub(channel));
      maintenance.push_back(etcdserverpb::Maintenance::NewStub(channel));
      watch.push_back(etcdserverpb::Watch::NewStub(channel));
    }
  }
  int size() const { return static_cast<int>(kv.size()); }
  std::vector<std::unique_ptr<etcdserverpb::KV::Stub>> kv;
  std::vector<std::unique_ptr<etcdserverpb::Lease::Stub>> lease;
  std::vector<std::unique_ptr<v3lockpb::Lock::Stub>> lock;
  std::vector<std::unique_ptr<etcdserverpb::Maintenance::Stub>> maintenance;
  std::vector<std::unique_ptr<etcdserverpb::Watch::Stub>> watch;
};

namespace {

// Every call waits for its member's connection up to its deadline instead of failing at once while
// the channel is between attempts: members come and go every few seconds.
void Deadline(grpc::ClientContext* context, double seconds) {
  context->set_wait_for_ready(true);
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
}

void SleepMs(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Sleeps up to `ms` in short steps, returning early once `stop` is set.
void SleepUnlessStopped(int64_t ms, const std::atomic<bool>& stop) {
  for (int64_t slept = 0; slept < ms && !stop.load(); slept += 50)
    SleepMs(std::min<int64_t>(50, ms - slept));
}

int64_t ParseValue(const etcdserverpb::RangeResponse& r) {
  int64_t v = 0;
  if (r.kvs_size() > 0 && !absl::SimpleAtoi(r.kvs(0).value(), &v)) v = -1;
  return v;
}

// One renewal on a fresh stream, as etcdctl's keep-alive --once (see keep_alive_once.h).
int64_t KeepAliveOnce(etcdserverpb::Lease::Stub* stub, int64_t id) {
  return testing::KeepAliveOnce(stub, id, 1.5, /*wait_for_ready=*/true);
}

std::string Token(int64_t token) { return absl::StrFormat("%020d", token); }

// The second watcher sees only deletes of lease keys (a registry waiting for instances to go);
// the third only puts of set keys, without prev_kv; the rest everything.
WatchFilter FilterOfWatcher(int worker) {
  WatchFilter filter;
  if (worker == 1) {
    filter.prefix = "lease/";
    filter.no_put = true;
  } else if (worker == 2) {
    filter.prefix = "set/";
    filter.no_delete = true;
    filter.prev_kv = false;
  }
  return filter;
}

}  // namespace

Workloads::Workloads(std::vector<std::string> endpoints, WorkloadOptions options,
                     const CampaignClock* clock, Recorder* recorder)
    : members_(std::make_unique<Members>(endpoints)),
      options_(options),
      clock_(clock),
      recorder_(recorder) {}

Workloads::~Workloads() { Stop(); }

void Workloads::Start() {
  stop_ = false;
  for (int i = 0; i < options_.register_workers; ++i)
    threads_.emplace_back([this, i] { RegisterWorker(i); });
  for (int i = 0; i < options_.set_workers; ++i) threads_.emplace_back([this, i] { SetWorker(i); });
  for (int i = 0; i < options_.lease_workers; ++i)
    threads_.emplace_back([this, i] { LeaseWorker(i); });
  if (options_.lease_workers > 0) threads_.emplace_back([this] { LeaseObserver(); });
  for (int i = 0; i < options_.lock_workers; ++i)
    threads_.emplace_back([this, i] { LockWorker(i); });
  for (int i = 0; i < options_.watch_workers; ++i)
    threads_.emplace_back([this, i] { WatchWorker(i); });
}

void Workloads::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void Workloads::Sample(int64_t at, int64_t latency, const char* kind, bool ok) {
  std::lock_guard lock(recorder_->mu);
  recorder_->samples.push_back({at, latency, kind, ok});
}

void Workloads::RegisterWorker(int worker) {
  std::mt19937_64 rng(options_.seed * 1000003 + worker);
  int node = worker % members_->size();
  int process = worker;
  std::vector<int64_t> last_seen(options_.register_keys, 0);
  const int64_t period_ms = static_cast<int64_t>(1000 / options_.register_rate);
  while (!stop_) {
    const int k = static_cast<int>(rng() % options_.register_keys);
    RegisterOp op;
    op.key = absl::StrCat("r", k);
    op.process = process;
    const int choice = static_cast<int>(rng() % 10);
    op.kind = choice < 5   ? RegisterOp::Kind::kRead
              : choice < 8 ? RegisterOp::Kind::kWrite
                           : RegisterOp::Kind::kCas;
    grpc::ClientContext context;
    Deadline(&context, 2.0);
    grpc::Status status;
    op.call_ns = clock_->Now();
    if (op.kind == RegisterOp::Kind::kRead) {
      etcdserverpb::RangeRequest request;
      request.set_key(op.key);
      request.set_serializable(options_.serializable_reads);
      etcdserverpb::RangeResponse response;
      status = members_->kv[node]->Range(&context, request, &response);
      op.value = ParseValue(response);
      if (status.ok()) last_seen[k] = op.value;
    } else {
      op.value = next_value_++;
      if (op.kind == RegisterOp::Kind::kWrite) {
        etcdserverpb::PutRequest request;
        request.set_key(op.key);
        request.set_value(std::to_string(op.value));
        etcdserverpb::PutResponse response;
        status = members_->kv[node]->Put(&context, request, &response);
      } else {
        op.expected = last_seen[k];
        etcdserverpb::TxnRequest request;
        auto* compare = request.add_compare();
        compare->set_key(op.key);
        compare->set_result(etcdserverpb::Compare::EQUAL);
        if (op.expected == 0) {
          compare->set_target(etcdserverpb::Compare::CREATE);
          compare->set_create_revision(0);
        } else {
          compare->set_target(etcdserverpb::Compare::VALUE);
          compare->set_value(std::to_string(op.expected));
        }
        auto* put = request.add_success()->mutable_request_put();
        put->set_key(op.key);
        put->set_value(std::to_string(op.value));
        etcdserverpb::TxnResponse response;
        status = members_->kv[node]->Txn(&context, request, &response);
        if (status.ok() && !response.succeeded()) op.outcome = RegisterOp::Outcome::kFail;
      }
    }
    op.return_ns = clock_->Now();
    if (!status.ok()) {
      // A read that failed had no effect; a write that failed may still happen later.
      op.outcome = op.kind == RegisterOp::Kind::kRead ? RegisterOp::Outcome::kFail
                                                      : RegisterOp::Outcome::kUnknown;
      node = (node + 1) % members_->size();
      if (op.outcome == RegisterOp::Outcome::kUnknown)
        process += 1000;  // this process may still be "in" op
    }
    {
      std::lock_guard lock(recorder_->mu);
      op.id = static_cast<int64_t>(recorder_->registers.size());
      recorder_->registers.push_back(op);
    }
    const char* kind = op.kind == RegisterOp::Kind::kRead    ? "read"
                       : op.kind == RegisterOp::Kind::kWrite ? "write"
                                                             : "cas";
    Sample(op.call_ns, op.return_ns - op.call_ns, kind, status.ok());
    SleepUnlessStopped(std::max<int64_t>(0, period_ms - (op.return_ns - op.call_ns) / 1000000),
                       stop_);
  }
}

void Workloads::SetWorker(int worker) {
  int node = worker % members_->size();
  while (!stop_) {
    const std::string key = absl::StrFormat("set/%08d", next_set_key_++);
    grpc::ClientContext context;
    Deadline(&context, 2.0);
    etcdserverpb::PutRequest request;
    request.set_key(key);
    request.set_value("x");
    etcdserverpb::PutResponse response;
    const int64_t call = clock_->Now();
    const grpc::Status status = members_->kv[node]->Put(&context, request, &response);
    const int64_t done = clock_->Now();
    if (status.ok()) {
      std::lock_guard lock(recorder_->mu);
      recorder_->set_acked.emplace_back(key, done);
    } else {
      node = (node + 1) % members_->size();
    }
    Sample(call, done - call, "set", status.ok());
    SleepUnlessStopped(50, stop_);
  }
}

void Workloads::VerifyAcknowledged(const std::string& label) {
  for (int attempt = 0; attempt < 3 * members_->size(); ++attempt) {
    const int node = attempt % members_->size();
    grpc::ClientContext context;
    Deadline(&context, 5.0);
    etcdserverpb::RangeRequest request;
    request.set_key("set/");
    request.set_range_end("set0");
    request.set_keys_only(true);
    etcdserverpb::RangeResponse response;
    const int64_t call = clock_->Now();
    if (!members_->kv[node]->Range(&context, request, &response).ok()) {
      SleepMs(500);
      continue;
    }
    std::vector<std::string> present;
    for (const auto& kv : response.kvs()) present.push_back(kv.key());
    std::lock_guard lock(recorder_->mu);
    ++recorder_->set_checks;
    for (std::string& a :
         MissingAcknowledged(recorder_->set_acked, present, call,
                             absl::StrCat("a read through m", node + 1, " ", label))) {
      recorder_->anomalies.push_back(std::move(a));
    }
    return;
  }
  std::lock_guard lock(recorder_->mu);
  recorder_->anomalies.push_back(absl::StrCat("no member answered a read of the set ", label));
}

void Workloads::LeaseWorker(int worker) {
  std::mt19937_64 rng(options_.seed * 7919 + worker);
  int node = worker % members_->size();
  auto rotate = [&] { node = (node + 1) % members_->size(); };
  while (!stop_) {
    LeaseLife life;
    life.ttl_s = options_.lease_ttl_s;
    {
      grpc::ClientContext context;
      Deadline(&context, 2.0);
      etcdserverpb::LeaseGrantRequest request;
      request.set_ttl(life.ttl_s);
      etcdserverpb::LeaseGrantResponse response;
      life.granted_sent_ns = clock_->Now();
      const grpc::Status status = members_->lease[node]->LeaseGrant(&context, request, &response);
      Sample(life.granted_sent_ns, clock_->Now() - life.granted_sent_ns, "lease", status.ok());
      if (!status.ok() || !response.error().empty()) {
        rotate();
        SleepUnlessStopped(200, stop_);
        continue;
      }
      life.id = response.id();
      life.ttl_s = response.ttl();
    }
    {
      grpc::ClientContext context;
      Deadline(&context, 2.0);
      etcdserverpb::PutRequest request;
      request.set_key(absl::StrCat("lease/", life.id));
      request.set_lease(life.id);
      etcdserverpb::PutResponse response;
      if (members_->kv[node]->Put(&context, request, &response).ok()) {
        life.put_acked_ns = clock_->Now();
      } else {
        rotate();
      }
    }
    const int64_t hold_until = clock_->Now() + static_cast<int64_t>(2000 + rng() % 8000) * 1000000;
    while (!stop_ && clock_->Now() < hold_until && life.gone_seen_ns < 0) {
      SleepMs(life.ttl_s * 1000 / 3);
      const int64_t sent = clock_->Now();
      const int64_t ttl = KeepAliveOnce(members_->lease[node].get(), life.id);
      Sample(sent, clock_->Now() - sent, "keepalive", ttl >= 0);
      if (ttl > 0) {
        life.renewals.emplace_back(sent, ttl);
      } else if (ttl == 0) {
        life.gone_seen_ns = clock_->Now();
      } else {
        rotate();
      }
    }
    if (life.gone_seen_ns < 0 && rng() % 2 == 0) {
      grpc::ClientContext context;
      Deadline(&context, 2.0);
      etcdserverpb::LeaseRevokeRequest request;
      request.set_id(life.id);
      etcdserverpb::LeaseRevokeResponse response;
      life.revoke_sent_ns = clock_->Now();
      if (members_->lease[node]->LeaseRevoke(&context, request, &response).ok()) {
        life.revoke_acked_ns = clock_->Now();
      } else {
        life.abandoned_ns =
            clock_->Now();  // the revoke may not have happened: now only expiry will end it
      }
    } else if (life.gone_seen_ns < 0) {
      life.abandoned_ns = clock_->Now();
    }
    std::lock_guard lock(recorder_->mu);
    recorder_->leases.push_back(std::move(life));
  }
}

void Workloads::LeaseObserver() {
  int node = 0;
  while (!stop_) {
    grpc::ClientContext context;
    Deadline(&context, 2.0);
    etcdserverpb::RangeRequest request;
    request.set_key("lease/");
    request.set_range_end("lease0");
    request.set_keys_only(true);
    etcdserverpb::RangeResponse response;
    LeaseObservation o;
    o.call_ns = clock_->Now();
    const grpc::Status status = members_->kv[node]->Range(&context, request, &response);
    o.return_ns = clock_->Now();
    if (status.ok()) {
      for (const auto& kv : response.kvs()) {
        int64_t id = 0;
        if (absl::SimpleAtoi(kv.key().substr(6), &id)) o.present.push_back(id);
      }
      std::sort(o.present.begin(), o.present.end());
      std::lock_guard lock(recorder_->mu);
      recorder_->lease_observations.push_back(std::move(o));
    }
    node = (node + 1) % members_->size();
    SleepUnlessStopped(200, stop_);
  }
}

void Workloads::LockWorker(int worker) {
  std::mt19937_64 rng(options_.seed * 104729 + worker);
  int node = worker % members_->size();
  int64_t seq = 0;
  auto rotate = [&] { node = (node + 1) % members_->size(); };
  while (!stop_) {
    int64_t lease = 0;
    {
      grpc::ClientContext context;
      Deadline(&context, 2.0);
      etcdserverpb::LeaseGrantRequest request;
      request.set_ttl(options_.lease_ttl_s);
      etcdserverpb::LeaseGrantResponse response;
      if (!members_->lease[node]->LeaseGrant(&context, request, &response).ok()) {
        rotate();
        SleepUnlessStopped(200, stop_);
        continue;
      }
      lease = response.id();
    }
    std::string key;
    {
      // A waiter keeps its lease alive while it waits, as etcd's concurrency session does;
      // otherwise its place in the queue would lapse with the lease.
      std::atomic<bool> waiting{true};
      std::thread renewer([&, lease_stub = members_->lease[node].get()] {
        for (int64_t slept = 0; waiting; slept += 50) {
          SleepMs(50);
          if (slept % (options_.lease_ttl_s * 1000 / 3) < 50)
            (void)KeepAliveOnce(lease_stub, lease);
        }
      });
      grpc::ClientContext context;
      Deadline(&context, 8.0);
      v3lockpb::LockRequest request;
      request.set_name("fence");
      request.set_lease(lease);
      v3lockpb::LockResponse response;
      const int64_t call = clock_->Now();
      const grpc::Status status = members_->lock[node]->Lock(&context, request, &response);
      Sample(call, clock_->Now() - call, "lock", status.ok());
      waiting = false;
      renewer.join();
      if (!status.ok()) {
        rotate();
        continue;  // the lease expires and releases whatever the request may have queued
      }
      key = response.key();
    }
    // The fencing token: the lock key's create revision (etcd's lock hands out the lock in that
    // order).
    int64_t token = 0;
    {
      grpc::ClientContext context;
      Deadline(&context, 2.0);
      etcdserverpb::RangeRequest request;
      request.set_key(key);
      etcdserverpb::RangeResponse response;
      if (!members_->kv[node]->Range(&context, request, &response).ok() ||
          response.kvs_size() == 0) {
        rotate();
        continue;
      }
      token = response.kvs(0).create_revision();
    }
    bool paused = false;
    for (int write = 0; write < 3 && !stop_; ++write) {
      if (write == 1 && rng() % 4 == 0) {
        // The seed's GC pause: the holder stalls past its lease's TTL, then writes as if it held.
        SleepMs(options_.lease_ttl_s * 1000 + 1000 + static_cast<int64_t>(rng() % 2000));
        paused = true;
      } else {
        SleepMs(100);
        if (KeepAliveOnce(members_->lease[node].get(), lease) < 0) rotate();
      }
      FencedWrite w;
      w.client = worker;
      w.token = token;
      w.seq = seq++;
      w.after_pause = paused;
      etcdserverpb::TxnRequest request;
      auto* compare = request.add_compare();
      compare->set_key("fenced-register/token");
      compare->set_target(etcdserverpb::Compare::VALUE);
      compare->set_result(etcdserverpb::Compare::GREATER);
      compare->set_value(Token(token));
      auto* put = request.add_failure()->mutable_request_put();
      put->set_key("fenced-register/token");
      put->set_value(Token(token));
      auto* entry = request.add_failure()->mutable_request_put();
      entry->set_key(absl::StrCat("fenced-register/log/", Token(token), "-", worker, "-", w.seq));
      grpc::ClientContext context;
      Deadline(&context, 2.0);
      etcdserverpb::TxnResponse response;
      w.call_ns = clock_->Now();
      const grpc::Status status = members_->kv[node]->Txn(&context, request, &response);
      w.return_ns = clock_->Now();
      if (!status.ok()) {
        w.outcome = FencedWrite::Outcome::kUnknown;
        rotate();
      } else {
        w.outcome =
            response.succeeded() ? FencedWrite::Outcome::kRefused : FencedWrite::Outcome::kAccepted;
      }
      Sample(w.call_ns, w.return_ns - w.call_ns, "fenced", status.ok());
      std::lock_guard lock(recorder_->mu);
      recorder_->fenced.push_back(w);
    }
    {
      grpc::ClientContext context;
      Deadline(&context, 2.0);
      v3lockpb::UnlockRequest request;
      request.set_key(key);
      v3lockpb::UnlockResponse response;
      (void)members_->lock[node]->Unlock(&context, request, &response);
    }
    {
      grpc::ClientContext context;
      Deadline(&context, 2.0);
      etcdserverpb::LeaseRevokeRequest request;
      request.set_id(lease);
      etcdserverpb::LeaseRevokeResponse response;
      (void)members_->lease[node]->LeaseRevoke(&context, request, &response);
    }
  }
}

std::vector<AcceptedWrite> Workloads::ReadFencedLog() {
  for (int attempt = 0; attempt < 3 * members_->size(); ++attempt) {
    grpc::ClientContext context;
    Deadline(&context, 5.0);
    etcdserverpb::RangeRequest request;
    request.set_key("fenced-register/log/");
    request.set_range_end("fenced-register/log0");
    etcdserverpb::RangeResponse response;
    if (!members_->kv[attempt % members_->size()]->Range(&context, request, &response).ok()) {
      SleepMs(500);
      continue;
    }
    std::vector<AcceptedWrite> log;
    for (const auto& kv : response.kvs()) {
      AcceptedWrite w;
      w.revision = kv.mod_revision();
      // fenced-register/log/<token>-<client>-<seq>
      if (std::sscanf(kv.key().c_str() + 20, "%ld-%d-%ld", &w.token, &w.client, &w.seq) == 3)
        log.push_back(w);
    }
    return log;
  }
  std::lock_guard lock(recorder_->mu);
  recorder_->anomalies.push_back("no member answered a read of the fenced register's log");
  return {};
}

void Workloads::FinalRegisterReads() {
  for (int k = 0; k < options_.register_keys; ++k) {
    for (int node = 0; node < members_->size(); ++node) {
      RegisterOp op;
      op.key = absl::StrCat("r", k);
      op.process = 1000000 + node;
      grpc::ClientContext context;
      Deadline(&context, 5.0);
      etcdserverpb::RangeRequest request;
      request.set_key(op.key);
      etcdserverpb::RangeResponse response;
      op.call_ns = clock_->Now();
      const grpc::Status status = members_->kv[node]->Range(&context, request, &response);
      op.return_ns = clock_->Now();
      op.value = ParseValue(response);
      op.outcome = status.ok() ? RegisterOp::Outcome::kOk : RegisterOp::Outcome::kFail;
      std::lock_guard lock(recorder_->mu);
      op.id = static_cast<int64_t>(recorder_->registers.size());
      recorder_->registers.push_back(op);
    }
  }
}

namespace {

// The negative controls' corruption of a watcher's log (WorkloadOptions::WatchFault), once the
// watcher has received `received` events. Returns true once done.
bool BreakWatchLog(WorkloadOptions::WatchFault fault, int received, WatchLog& log) {
  if (fault == WorkloadOptions::WatchFault::kNone || received < 10 || log.items.empty())
    return false;
  std::vector<WatchLog::Item>& items = log.items;
  switch (fault) {
    case WorkloadOptions::WatchFault::kDrop:
      items.pop_back();
      return true;
    case WorkloadOptions::WatchFault::kReorder: {
      const size_t n = items.size();
      if (n < 2 || items[n - 1].progress || items[n - 2].progress ||
          items[n - 1].event.revision == items[n - 2].event.revision)
        return false;  // tried again after the next response
      std::swap(items[n - 1].event, items[n - 2].event);
      return true;
    }
    case WorkloadOptions::WatchFault::kProgress: {
      WatchLog::Item ahead;
      ahead.progress = true;
      ahead.progress_revision = items.back().event.revision + 5;
      items.push_back(ahead);
      return true;
    }
    case WorkloadOptions::WatchFault::kNone:
      break;
  }
  return false;
}

}  // namespace

void Workloads::WatchWorker(int worker) {
  WatchLog log;
  log.watcher = worker;
  log.filter = FilterOfWatcher(worker);
  int64_t next = log.start_revision;  // the revision to resume at
  int node = worker % members_->size();
  int received = 0;
  int64_t responses = 0;
  bool broken = worker != 0;  // only the first watcher plays a negative control
  while (!stop_) {
    ++log.streams;
    grpc::ClientContext context;
    // As etcdctl watch does: a member that loses its leader ends the stream, and the watcher moves.
    context.AddMetadata("hasleader", "true");
    auto stream = members_->watch[node]->Watch(&context);
    std::atomic<int64_t> heard_ns{clock_->Now()};
    std::atomic<bool> done{false};
    const bool sent = stream->Write(FilteredWatch(log.filter, next));
    // Asks for progress twice a second (the only writer from here on); gives the stream up when the
    // member stays silent (paused, cut off) for 3 s, or when the campaign stops.
    std::thread pacer([&] {
      while (sent && !done && !stop_ && clock_->Now() - heard_ns.load() < 3'000'000'000LL) {
        SleepMs(500);
        if (!stream->Write(ProgressRequest())) break;
      }
      context.TryCancel();
    });
    if (sent) {
      etcdserverpb::WatchResponse response;
      while (stream->Read(&response)) {
        heard_ns = clock_->Now();
        if (response.canceled()) break;
        if (response.created()) continue;
        ++responses;
        if (response.events_size() == 0) {  // a progress notification
          WatchLog::Item item;
          item.progress = true;
          item.progress_revision = response.header().revision();
          item.response = responses;
          log.items.push_back(item);
          next = std::max(next, item.progress_revision + 1);
          continue;
        }
        for (const auto& e : response.events()) {
          ++received;
          next = std::max(next, e.kv().mod_revision() + 1);
          WatchLog::Item item;
          item.event = ToWatchedEvent(e);
          item.response = responses;
          log.items.push_back(std::move(item));
        }
        if (!broken) broken = BreakWatchLog(options_.break_watch, received, log);
      }
    }
    done = true;
    context.TryCancel();
    pacer.join();
    (void)stream->Finish();
    node = (node + 1) % members_->size();
  }
  std::lock_guard lock(recorder_->mu);
  recorder_->watches.push_back(std::move(log));
}

std::vector<WatchedEvent> Workloads::ReadWatchHistory(
    std::map<std::string, std::string>* final_state) {
  for (int attempt = 0; attempt < 3 * members_->size(); ++attempt) {
    const int node = attempt % members_->size();
    // Every key, linearizably: the revision the history must reach, and what it must leave behind.
    etcdserverpb::RangeResponse current;
    {
      grpc::ClientContext context;
      Deadline(&context, 5.0);
      etcdserverpb::RangeRequest request;
      request.set_key(std::string(1, '\0'));
      request.set_range_end(std::string(1, '\0'));
      if (!members_->kv[node]->Range(&context, request, &current).ok()) {
        SleepMs(500);
        continue;
      }
    }
    const int64_t target = current.header().revision();
    grpc::ClientContext context;
    Deadline(&context, 20.0);
    auto stream = members_->watch[node]->Watch(&context);
    std::vector<WatchedEvent> history;
    bool complete = target <= 1;
    // Complete once an event or a progress notification reaches the target (a progress request is
    // answered once the replay is out).
    if (stream->Write(WatchEverything(1)) && stream->Write(ProgressRequest())) {
      etcdserverpb::WatchResponse response;
      while (!complete && stream->Read(&response)) {
        for (const auto& e : response.events()) history.push_back(ToWatchedEvent(e));
        const bool progress = response.events_size() == 0 && !response.created();
        complete = (!history.empty() && history.back().revision >= target) ||
                   (progress && response.header().revision() >= target);
      }
    }
    context.TryCancel();
    (void)stream->Finish();
    if (!complete) continue;
    // A lease may have expired since the read: the history ends where the read stood.
    history.erase(std::find_if(history.begin(), history.end(),
                               [target](const WatchedEvent& e) { return e.revision > target; }),
                  history.end());
    final_state->clear();
    for (const auto& kv : current.kvs()) (*final_state)[kv.key()] = kv.value();
    return history;
  }
  std::lock_guard lock(recorder_->mu);
  recorder_->anomalies.push_back("no member answered a watch of the whole history");
  return {};
}

int Workloads::Leader(const std::vector<int>& candidates) {
  std::vector<std::pair<uint64_t, int>> ids;  // member id -> index
  uint64_t leader = 0;
  for (int i : candidates) {
    grpc::ClientContext context;
    Deadline(&context, 0.5);
    etcdserverpb::StatusRequest request;
    etcdserverpb::StatusResponse response;
    if (!members_->maintenance[i]->Status(&context, request, &response).ok()) continue;
    ids.emplace_back(response.header().member_id(), i);
    if (response.leader() != 0) leader = response.leader();
  }
  for (const auto& [id, index] : ids) {
    if (id == leader) return index;
  }
  return -1;
}

int64_t Workloads::RaftIndex(const std::vector<int>& members) {
  int64_t highest = -1;
  for (int i : members) {
    grpc::ClientContext context;
    Deadline(&context, 0.5);
    etcdserverpb::StatusRequest request;
    etcdserverpb::StatusResponse response;
    if (members_->maintenance[i]->Status(&context, request, &response).ok())
      highest = std::max(highest, static_cast<int64_t>(response.raftindex()));
  }
  return highest;
}

}  // namespace leasehold::faults
