#include "server/watch/watch_hub.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <tuple>

#include "absl/container/node_hash_map.h"
#include "etcdserverpb/rpc.pb.h"
#include "server/observability/log.h"
#include "storage/mvcc/mvcc_store.h"

namespace leasehold::server {

namespace {

bool AnyPrevKv(const std::vector<mvccpb::Event>& events) {
  for (const auto& e : events) {
    if (e.has_prev_kv()) return true;
  }
  return false;
}

// Distinct revisions among `events` (ascending).
int RevisionCount(const std::vector<mvccpb::Event>& events) {
  int count = 0;
  int64_t last = 0;
  for (const auto& e : events) {
    if (e.kv().mod_revision() != last) ++count;
    last = e.kv().mod_revision();
  }
  return count;
}

}  // namespace

SharedEvents::SharedEvents(const std::vector<mvccpb::Event>& events)
    : events_(events), any_prev_kv_(AnyPrevKv(events)) {}

const grpc::Slice& SharedEvents::Encoded(bool prev_kv) const {
  // Without any prev_kv the two encodings are one.
  const int variant = prev_kv && any_prev_kv_ ? 1 : 0;
  absl::call_once(once_[variant], [this, variant] {
    // A response holding just the events serialises to exactly the field's bytes.
    etcdserverpb::WatchResponse holder;
    for (const auto& e : events_) {
      mvccpb::Event* copy = holder.add_events();
      *copy = e;
      if (variant == 0) copy->clear_prev_kv();
    }
    encoded_[variant] = grpc::Slice(holder.SerializeAsString());
  });
  return encoded_[variant];
}

WatchHub::WatchHub(storage::StateMachine* state_machine, absl::Duration progress_interval)
    : state_machine_(state_machine),
      fan_out_(static_cast<int>(std::max(1u, std::min(4u, std::thread::hardware_concurrency())))),
      published_revision_(state_machine->revision()),
      progress_interval_ms_(std::max<int64_t>(1, absl::ToInt64Milliseconds(progress_interval))),
      fan_out_thread_([this] { FanOutLoop(); }) {}

WatchHub::CallerLock::CallerLock(const WatchHub* hub) : hub_(hub) {
  if (hub_->mu_.TryLock()) return;
  hub_->hurry_.fetch_add(1);
  hub_->fan_out_.Nudge();
  hub_->mu_.Lock();
  hub_->hurry_.fetch_sub(1);
}

WatchHub::CallerLock::~CallerLock() { hub_->mu_.Unlock(); }

WatchHub::~WatchHub() {
  {
    absl::MutexLock lock(&backlog_mu_);
    stopping_ = true;
  }
  fan_out_thread_.join();
}

int64_t WatchHub::published_revision() const {
  CallerLock lock(this);
  return published_revision_;
}

WatchHub::Stats WatchHub::stats() const {
  CallerLock lock(this);
  Stats stats;
  stats.streams = tickers_.size();
  for (const auto& [sink, watchers] : watchers_) {
    stats.watchers += watchers.size();
    for (const auto& [id, w] : watchers) {
      if (!w.lagging) continue;
      ++stats.slow_watchers;
      if (published_revision_ >= w.next_revision)
        stats.pending_revisions += static_cast<uint64_t>(published_revision_ - w.next_revision + 1);
    }
  }
  stats.events_sent = events_sent_.load(std::memory_order_relaxed);
  return stats;
}

bool WatchHub::Matches(const Watcher& w, const mvccpb::Event& event) const {
  if (event.kv().mod_revision() < w.next_revision) return false;
  if (event.type() == mvccpb::Event::PUT ? w.spec.no_put : w.spec.no_delete) return false;
  return storage::MvccStore::InRange(event.kv().key(), w.spec.key, w.spec.range_end);
}

bool WatchHub::SendLocked(Watcher& w, std::vector<mvccpb::Event> events, int64_t revision) {
  if (events.empty()) return true;
  if (!w.spec.prev_kv) {
    for (auto& e : events) e.clear_prev_kv();
  }
  // At most kMaxRevisionsPerResponse revisions per response, as etcd sends a watcher catching up
  // from history: a client with a receive limit (gRPC's default is 4 MiB) can follow a long
  // history. A revision is never split.
  size_t begin = 0;
  while (begin < events.size()) {
    size_t end = begin;
    int revisions = 0;
    for (int64_t rev = 0; end < events.size(); ++end) {
      if (events[end].kv().mod_revision() != rev) {
        if (revisions == kMaxRevisionsPerResponse) break;
        rev = events[end].kv().mod_revision();
        ++revisions;
      }
    }
    const int64_t last = events[end - 1].kv().mod_revision();
    std::vector<mvccpb::Event> chunk;
    if (begin == 0 && end == events.size()) {
      chunk = std::move(events);
    } else {
      chunk.assign(std::make_move_iterator(events.begin() + static_cast<std::ptrdiff_t>(begin)),
                   std::make_move_iterator(events.begin() + static_cast<std::ptrdiff_t>(end)));
    }
    const size_t count = chunk.size();
    if (!w.sink->Deliver(w.spec, std::move(chunk), revision)) return false;
    events_sent_.fetch_add(count, std::memory_order_relaxed);
    w.next_revision = last + 1;
    w.idle = false;
    begin = end;
  }
  return true;
}

std::vector<WatchHub::Watcher*> WatchHub::WatchersOfKeysLocked(
    const std::vector<mvccpb::Event>& events) {
  // Listed once each as they are met (a revoke deleting thousands of keys under one watched prefix
  // meets each watcher thousands of times), then grouped by sink.
  const uint64_t collection = ++collections_;
  std::vector<Watcher*> found;
  for (const auto& e : events) {
    by_range_.ForEachHolding(e.kv().key(), [&found, collection](Watcher* w) {
      if (w->collected == collection) return;
      w->collected = collection;
      found.push_back(w);
    });
  }
  std::sort(found.begin(), found.end(), [](const Watcher* a, const Watcher* b) {
    return std::tie(a->connection, a->sink, a) < std::tie(b->connection, b->sink, b);
  });
  return found;
}

namespace {

// [begin, end) of each run of watchers of one sink in `watchers` (grouped by sink).
template <typename W>
std::vector<std::pair<size_t, size_t>> SinkRuns(const std::vector<W*>& watchers) {
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t begin = 0, end = 0; begin < watchers.size(); begin = end) {
    for (end = begin + 1; end < watchers.size() && watchers[end]->sink == watchers[begin]->sink;
         ++end) {
    }
    runs.emplace_back(begin, end);
  }
  return runs;
}

}  // namespace

void WatchHub::Publish(const std::vector<mvccpb::Event>& events, int64_t revision,
                       const std::function<void()>& midway) {
  bool busy;
  {
    absl::MutexLock lock(&backlog_mu_);
    busy = fanning_out_;
    if (busy) HandOverLocked(events, revision);
  }
  if (!busy) {
    // A group of more revisions than one response may hold goes the per-watcher way, in pieces.
    const SharedEvents shared(events);
    const SharedEvents* shareable =
        RevisionCount(events) <= kMaxRevisionsPerResponse ? &shared : nullptr;
    bool all_served = true;
    {
      CallerLock lock(this);
      const std::vector<Watcher*> watchers = WatchersOfKeysLocked(events);
      int served = 0;
      for (const auto& [begin, end] : SinkRuns(watchers)) {
        if (served == kStreamsServedFirst) {
          all_served = false;
          break;
        }
        if (ServeLocked(watchers, begin, end, events, shareable, revision)) ++served;
      }
      if (all_served) published_revision_ = std::max(published_revision_, revision);
    }
    // The rest go from the fan-out thread: those served above have moved their next_revision past
    // these events, so Matches skips them there.
    if (!all_served) {
      absl::MutexLock lock(&backlog_mu_);
      HandOverLocked(events, revision);
    }
  }
  // Without the lock: answering may lead to calls into the hub.
  midway();
}

void WatchHub::HandOverLocked(const std::vector<mvccpb::Event>& events, int64_t revision) {
  if (!backlog_overflowed_) {
    size_t bytes = 0;
    for (const auto& e : events) bytes += e.ByteSizeLong();
    if (backlog_bytes_ + bytes > kMaxBacklogBytes) {
      backlog_.clear();
      backlog_bytes_ = 0;
      backlog_overflowed_ = true;
    } else {
      backlog_.insert(backlog_.end(), events.begin(), events.end());
      backlog_bytes_ += bytes;
    }
  }
  backlog_revision_ = std::max(backlog_revision_, revision);
  handed_ = true;
  fanning_out_ = true;
  EndQuietRoundLocked();
}

void WatchHub::EndQuietRoundLocked() {
  if (!quiet_round_) return;
  quiet_round_ = false;
  hurry_.fetch_sub(1);
  fan_out_.Nudge();
}

void WatchHub::FanOutLoop() {
  while (true) {
    std::vector<mvccpb::Event> events;
    int64_t revision = 0;
    bool resync = false;
    {
      absl::MutexLock lock(&backlog_mu_);
      backlog_mu_.Await(absl::Condition(
          +[](WatchHub* hub)
               ABSL_NO_THREAD_SAFETY_ANALYSIS { return hub->handed_ || hub->stopping_; },
          this));
      if (stopping_) return;
      // Whole revisions from the front, at most kMaxRevisionsPerRound of them.
      size_t take = 0;
      while (take < backlog_.size() &&
             backlog_[take].kv().mod_revision() - backlog_.front().kv().mod_revision() <
                 kMaxRevisionsPerRound) {
        ++take;
      }
      resync = backlog_overflowed_;
      if (resync || take == backlog_.size()) {
        events.swap(backlog_);  // leaves the backlog empty: `events` was
        revision = backlog_revision_;
        backlog_bytes_ = 0;
        backlog_overflowed_ = false;
        handed_ = false;
      } else {
        const auto end = backlog_.begin() + static_cast<std::ptrdiff_t>(take);
        events.assign(std::make_move_iterator(backlog_.begin()), std::make_move_iterator(end));
        backlog_.erase(backlog_.begin(), end);
        for (const auto& e : events) backlog_bytes_ -= std::min(backlog_bytes_, e.ByteSizeLong());
        revision = events.back().kv().mod_revision();
      }
      quiet_round_ = true;
      hurry_.fetch_add(1);
    }
    {
      absl::MutexLock lock(&mu_);
      if (resync) {
        ResyncLocked(revision);
      } else {
        ServeAllLocked(events, revision);
      }
    }
    absl::MutexLock lock(&backlog_mu_);
    EndQuietRoundLocked();
    if (!handed_) fanning_out_ = false;
  }
}

void WatchHub::ServeAllLocked(const std::vector<mvccpb::Event>& events, int64_t revision) {
  const SharedEvents shared(events);
  const SharedEvents* shareable =
      RevisionCount(events) <= kMaxRevisionsPerResponse ? &shared : nullptr;
  const std::vector<Watcher*> watchers = WatchersOfKeysLocked(events);
  const std::vector<std::pair<size_t, size_t>> runs = SinkRuns(watchers);
  // Sinks are disjoint, so chunks of them can be served in parallel; we hold mu_ throughout.
  fan_out_.Run(
      runs.size(), /*block=*/1, /*min_parallel=*/64,
      [&](size_t begin, size_t end) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        for (size_t i = begin; i < end; ++i)
          ServeLocked(watchers, runs[i].first, runs[i].second, events, shareable, revision);
      },
      hurry_);
  // A resync may have moved it further meanwhile: it never goes back.
  published_revision_ = std::max(published_revision_, revision);
}

WatchHub::Delivery WatchHub::DeliverMatchingLocked(Watcher& w,
                                                   const std::vector<mvccpb::Event>& events,
                                                   const SharedEvents* shared, int64_t revision) {
  size_t matched = 0;
  for (const auto& e : events) matched += Matches(w, e) ? 1 : 0;
  if (matched == 0) return Delivery::kNothing;
  if (shared != nullptr && matched == events.size()) {
    if (!w.sink->DeliverShared(w.spec, *shared, revision)) return Delivery::kRefused;
    events_sent_.fetch_add(events.size(), std::memory_order_relaxed);
    w.next_revision = events.back().kv().mod_revision() + 1;
    w.idle = false;
    return Delivery::kSent;
  }
  std::vector<mvccpb::Event> mine;
  mine.reserve(matched);
  for (const auto& e : events) {
    if (Matches(w, e)) mine.push_back(e);
  }
  return SendLocked(w, std::move(mine), revision) ? Delivery::kSent : Delivery::kRefused;
}

bool WatchHub::ServeLocked(const std::vector<Watcher*>& watchers, size_t begin, size_t end,
                           const std::vector<mvccpb::Event>& events, const SharedEvents* shared,
                           int64_t revision) {
  bool sent = false;
  for (size_t i = begin; i < end; ++i) {
    Watcher& w = *watchers[i];
    if (w.lagging) continue;
    const Delivery delivery = DeliverMatchingLocked(w, events, shared, revision);
    sent = sent || delivery != Delivery::kNothing;
    // A full sink leaves next_revision where it was; the missed events are replayed from history.
    if (delivery == Delivery::kRefused) w.lagging = true;
  }
  return sent;
}

// The lagging watchers of one stream usually missed the same events: a put watched thousands of
// times over one stream fills it, and most of its watchers are caught up later. Each distinct
// piece of history (start, range) is read from the store once per catch-up, and encoded once for
// the watchers that take all of it.
struct WatchHub::ReplayCache {
  struct Entry {
    std::vector<mvccpb::Event> events;
    std::unique_ptr<SharedEvents> shared;
  };
  // Node-based: SharedEvents holds a reference to its entry's events.
  absl::node_hash_map<std::tuple<int64_t, std::string, std::string>, Entry> entries;
};

WatchHub::Replayed WatchHub::ReplayPieceLocked(Watcher& w, ReplayCache* cache) {
  // Already has everything published (it was served ahead of the fan-out: Publish's first streams).
  if (w.next_revision > published_revision_) return Replayed::kAll;
  // At most kMaxRevisionsPerResponse store revisions, so the piece is one response, and the same
  // piece for every watcher of the range that stands at the same revision.
  const int64_t to = std::min(published_revision_, w.next_revision + kMaxRevisionsPerResponse - 1);
  ReplayCache::Entry uncached;
  ReplayCache::Entry* read = &uncached;
  bool fresh = true;
  decltype(ReplayCache::entries)::iterator cached;
  if (cache != nullptr) {
    std::tie(cached, fresh) =
        cache->entries.try_emplace(std::make_tuple(w.next_revision, w.spec.key, w.spec.range_end));
    read = &cached->second;
  }
  if (fresh) {
    absl::Status st = state_machine_->History(w.next_revision, to, w.spec.key, w.spec.range_end,
                                              true, &read->events);
    if (!st.ok()) {
      if (cache != nullptr) cache->entries.erase(cached);
      LogWarn("watch history replay failed", {{"error", st.ToString()}});
      return Replayed::kFailed;
    }
    if (!read->events.empty()) read->shared = std::make_unique<SharedEvents>(read->events);
  }
  if (DeliverMatchingLocked(w, read->events, read->shared.get(), published_revision_) ==
      Delivery::kRefused) {
    return Replayed::kSinkFull;
  }
  w.next_revision = to + 1;
  return to == published_revision_ ? Replayed::kAll : Replayed::kPartly;
}

absl::Status WatchHub::Add(WatchSink* sink, const WatchSpec& spec, int64_t* current_revision,
                           int64_t* compact_revision) {
  CallerLock lock(this);
  *current_revision = published_revision_;
  Watcher w{spec, sink, spec.start_revision > 0 ? spec.start_revision : published_revision_ + 1};
  if (auto it = connection_of_.find(sink); it != connection_of_.end()) w.connection = it->second;
  if (spec.before_first && state_machine_->compacted_revision() > 0) {
    *compact_revision = state_machine_->compacted_revision();
    return absl::OutOfRangeError("etcdserver: mvcc: required revision has been compacted");
  }
  if (w.next_revision <= published_revision_) {
    const int64_t compacted = state_machine_->compacted_revision();
    if (w.next_revision < compacted) {
      *compact_revision = compacted;
      return absl::OutOfRangeError("etcdserver: mvcc: required revision has been compacted");
    }
    Replayed replayed;
    while ((replayed = ReplayPieceLocked(w, nullptr)) == Replayed::kPartly) {
    }
    if (replayed != Replayed::kAll) w.lagging = true;
  }
  auto [it, added] = watchers_[sink].try_emplace(spec.watch_id, std::move(w));
  if (!added) {  // a stream reuses a watch id only once its watcher is gone; never two under one id
    by_range_.Erase(it->second.spec.key, it->second.spec.range_end, &it->second);
    it->second = std::move(w);
  }
  by_range_.Insert(spec.key, spec.range_end, &it->second);
  return absl::OkStatus();
}

bool WatchHub::Remove(WatchSink* sink, int64_t watch_id) {
  CallerLock lock(this);
  auto it = watchers_.find(sink);
  if (it == watchers_.end()) return false;
  auto w = it->second.find(watch_id);
  const bool removed = w != it->second.end();
  if (removed) {
    by_range_.Erase(w->second.spec.key, w->second.spec.range_end, &w->second);
    it->second.erase(w);
  }
  if (it->second.empty()) watchers_.erase(it);
  return removed;
}

namespace {
int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void WatchHub::OpenStream(WatchSink* sink, std::string_view connection) {
  CallerLock lock(this);
  connection_of_[sink] = std::hash<std::string_view>()(connection);
  const int64_t period =
      progress_interval_ms_ + absl::Uniform<int64_t>(jitter_, 0, progress_interval_ms_ / 10 + 1);
  const int64_t due = SteadyMs() + period;
  if (!tickers_.emplace(sink, ProgressTicker{due, period}).second) return;
  tickers_by_due_.emplace(due, sink);
}

absl::Duration WatchHub::NotifyProgress() {
  CallerLock lock(this);
  const int64_t now = SteadyMs();
  while (!tickers_by_due_.empty() && tickers_by_due_.begin()->first <= now) {
    WatchSink* sink = tickers_by_due_.begin()->second;
    tickers_by_due_.erase(tickers_by_due_.begin());
    ProgressTicker& ticker = tickers_[sink];
    // Like Go's ticker, a tick missed while the thread was held up is dropped, not made up for.
    ticker.due_ms += ticker.period_ms;
    if (ticker.due_ms <= now) ticker.due_ms = now + ticker.period_ms;
    tickers_by_due_.emplace(ticker.due_ms, sink);
    auto it = watchers_.find(sink);
    if (it == watchers_.end()) continue;
    for (auto& [id, w] : it->second) {
      if (!w.spec.progress_notify || w.lagging) continue;
      if (w.idle) sink->Progress(id, published_revision_);
      w.idle = true;
    }
  }
  const int64_t next = tickers_by_due_.empty()
                           ? now + progress_interval_ms_
                           : std::min(tickers_by_due_.begin()->first, now + progress_interval_ms_);
  return absl::Milliseconds(next - now);
}

void WatchHub::RequestProgress(WatchSink* sink) {
  CallerLock lock(this);
  if (auto it = watchers_.find(sink); it != watchers_.end()) {
    for (const auto& [id, w] : it->second) {
      if (w.lagging) {
        progress_requested_.insert(sink);
        return;
      }
    }
  }
  sink->RequestedProgress(published_revision_);
}

void WatchHub::NotifyNoLeader() {
  CallerLock lock(this);
  for (auto& [sink, watchers] : watchers_) sink->NoLeader();
}

void WatchHub::RemoveAll(WatchSink* sink) {
  CallerLock lock(this);
  connection_of_.erase(sink);
  progress_requested_.erase(sink);
  if (auto ticker = tickers_.find(sink); ticker != tickers_.end()) {
    tickers_by_due_.erase({ticker->second.due_ms, sink});
    tickers_.erase(ticker);
  }
  auto it = watchers_.find(sink);
  if (it == watchers_.end()) return;
  for (auto& [id, w] : it->second) by_range_.Erase(w.spec.key, w.spec.range_end, &w);
  watchers_.erase(it);
}

void WatchHub::CatchUp(WatchSink* sink) {
  CallerLock lock(this);
  auto it = watchers_.find(sink);
  if (it != watchers_.end()) CatchUpLocked(sink, it->second);
}

void WatchHub::Resync(int64_t revision) {
  CallerLock lock(this);
  {
    // What was handed over is at or below `revision`, in history: the catch-up covers it.
    absl::MutexLock backlog_lock(&backlog_mu_);
    backlog_.clear();
    backlog_bytes_ = 0;
    backlog_overflowed_ = false;
    handed_ = false;
  }
  ResyncLocked(revision);
}

void WatchHub::ResyncLocked(int64_t revision) {
  published_revision_ = std::max(published_revision_, revision);
  for (auto& [sink, watchers] : watchers_) {
    for (auto& [id, w] : watchers) w.lagging = true;
    CatchUpLocked(sink, watchers);
  }
}

void WatchHub::CatchUpLocked(WatchSink* sink, SinkWatchers& watchers) {
  const int64_t compacted = state_machine_->compacted_revision();
  std::vector<Watcher*> lagging;
  for (auto w = watchers.begin(); w != watchers.end();) {
    if (w->second.lagging && w->second.next_revision < compacted) {
      // What it missed is gone; etcd cancels such a watcher with the compact revision too.
      sink->Compacted(w->first, compacted);
      by_range_.Erase(w->second.spec.key, w->second.spec.range_end, &w->second);
      watchers.erase(w++);
      continue;
    }
    if (w->second.lagging) lagging.push_back(&w->second);
    ++w;
  }
  // Furthest behind first, a piece each per round: the stream's watchers advance together (so
  // they keep sharing pieces), and none waits while others are served again and again.
  std::sort(lagging.begin(), lagging.end(), [](const Watcher* a, const Watcher* b) {
    return std::tie(a->next_revision, a->spec.watch_id) <
           std::tie(b->next_revision, b->spec.watch_id);
  });
  bool failed = false;  // a history read failed: that watcher stays lagging
  while (!lagging.empty()) {
    ReplayCache cache;  // per round: the next round's pieces start further on
    std::vector<Watcher*> behind;
    for (Watcher* w : lagging) {
      switch (ReplayPieceLocked(*w, &cache)) {
        case Replayed::kSinkFull:
          // It calls again once it has room: reading more history for it now would be wasted.
          return;
        case Replayed::kAll:
          w->lagging = false;
          break;
        case Replayed::kPartly:
          behind.push_back(w);
          break;
        case Replayed::kFailed:  // stays lagging, tried again at the sink's next call
          failed = true;
          break;
      }
    }
    lagging.swap(behind);
  }
  // Every watcher of the sink is caught up, unless a read failed (the request then waits).
  if (!failed && progress_requested_.erase(sink) > 0) sink->RequestedProgress(published_revision_);
}

}  // namespace leasehold::server
