// Fan-out of applied changes to watchers. Each group's events are published once they are flushed;
// every watcher whose range and filters match receives them, in responses that never split a
// revision: one per watcher per round of the hub's fan-out thread, which sends together the groups
// published while it was busy. A watcher that starts in the past is first replayed from the store's
// history; a watcher whose stream cannot keep up is marked lagging and later caught up from history
// (as etcd's unsynced watchers are), so one slow client never holds back the others.
//
// Thread-safe. Lock order: the hub's lock, then a sink's own lock; sinks never call into the hub
// while holding their lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/support/slice.h>

#include "absl/base/call_once.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "mvccpb/kv.pb.h"
#include "server/watch/key_range_index.h"
#include "server/watch/parallel_for.h"
#include "storage/apply/state_machine.h"

namespace leasehold::server {

struct WatchSpec {
  int64_t watch_id = 0;
  std::string key;
  std::string range_end;
  int64_t start_revision = 0;  // 0: from the next revision
  // The client asked for a negative start revision, which etcd reads as one before the first: the
  // watcher starts at start_revision (the next one) while nothing has been compacted, and is told
  // its history was compacted away once anything has been.
  bool before_first = false;
  bool prev_kv = false;
  bool no_put = false;
  bool no_delete = false;
  bool progress_notify = false;  // wants periodic progress notifications while idle
  bool fragment = false;         // accepts responses split into fragments
};

// One published group's events, for the watchers that match every one of them (a put watched by
// thousands): encoded once, as the bytes of WatchResponse's repeated `events` field, and shared by
// reference among all their responses rather than copied and serialised once per watcher.
// Thread-safe. It must outlive the calls it is passed to; the encodings it hands out are
// reference-counted and may outlive it.
class SharedEvents {
 public:
  explicit SharedEvents(const std::vector<mvccpb::Event>& events);
  const std::vector<mvccpb::Event>& events() const { return events_; }
  // The encoding, with each event's prev_kv kept or dropped. Computed on first use.
  const grpc::Slice& Encoded(bool prev_kv) const;

 private:
  const std::vector<mvccpb::Event>& events_;
  const bool any_prev_kv_;
  mutable absl::once_flag once_[2];
  mutable grpc::Slice encoded_[2];
};

// Where a watcher's events go (a watch stream).
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  // Queues one response for `watch_id` holding `events` (all of revisions <= `revision`). Returns
  // false, queuing nothing, when the sink is too far behind; the hub then replays later.
  virtual bool Deliver(const WatchSpec& spec, std::vector<mvccpb::Event> events,
                       int64_t revision) = 0;
  // The same for every one of `events` (at most kMaxRevisionsPerResponse revisions), without
  // copies.
  virtual bool DeliverShared(const WatchSpec& spec, const SharedEvents& events,
                             int64_t revision) = 0;
  // Tells the client that every event up to `revision` was sent. May be dropped when the sink is
  // full.
  virtual void Progress(int64_t watch_id, int64_t revision) = 0;
  // Answers the client's progress request (watch id -1): every watcher of the stream has had every
  // event up to `revision`. Never dropped.
  virtual void RequestedProgress(int64_t revision) = 0;
  // The watcher is gone: what it still had to see was compacted away. Tell the client.
  virtual void Compacted(int64_t watch_id, int64_t compact_revision) = 0;
  // This member has had no leader for a while; a stream whose client requires one ends.
  virtual void NoLeader() = 0;
};

class WatchHub {
 public:
  // `progress_interval`: etcd's --experimental-watch-progress-notify-interval.
  WatchHub(storage::StateMachine* state_machine, absl::Duration progress_interval);

  // Stops the fan-out thread; what it had still to send is dropped.
  ~WatchHub();

  // Called by one thread (the one answering writes) after the group holding these events has been
  // flushed; `revision` is the store revision after the group. When no earlier group is still
  // being fanned out, serves the first few streams with a matching watcher at once (so a lock
  // waiter hears of its predecessor's deletion before the deleter's answer goes out) and hands the
  // others to the fan-out thread; otherwise hands all of it over, to go out with the groups
  // waiting before it, each watcher getting one response for all of them. Then calls `midway`
  // (without the hub's lock held) and returns: a write watched by thousands is not answered only
  // after all of them, and the next write's answer does not wait for this one's fan-out.
  // published_revision() moves to `revision` once every stream is served: until then a created,
  // cancelled or progress response may name an earlier revision (a lower bound, never a promise
  // of events a watcher has not had).
  void Publish(const std::vector<mvccpb::Event>& events, int64_t revision,
               const std::function<void()>& midway);

  // Registers a watcher and replays its history. On a compacted start revision, registers nothing
  // and returns OutOfRange with `*compact_revision` set. The revision the watcher is current at is
  // returned in `*current_revision` either way.
  [[nodiscard]] absl::Status Add(WatchSink* sink, const WatchSpec& spec, int64_t* current_revision,
                                 int64_t* compact_revision);
  // Returns false when the sink has no such watcher.
  bool Remove(WatchSink* sink, int64_t watch_id);
  // Drops every watcher of `sink`; after it returns the hub never calls `sink` again.
  void RemoveAll(WatchSink* sink);
  // Replays what the sink's lagging watchers missed, now that it has room again.
  void CatchUp(WatchSink* sink);
  // The store jumped to `revision` without publishing the events in between (this member installed
  // a snapshot): every watcher is caught up from history, or told it was compacted away. Called by
  // the thread that calls Publish.
  void Resync(int64_t revision);

  // A stream has opened on the client connection named `connection` (any text naming it): its
  // progress ticker starts now (see NotifyProgress). RemoveAll stops it. A fan-out serves the
  // streams of one connection one after another, so that a client reading them is woken once for
  // many rather than once for each.
  void OpenStream(WatchSink* sink, std::string_view connection);
  // etcd's progress notifications, from one ticker per stream started when the stream opened, each
  // with a period of the interval plus up to a tenth of it at random (streams opened together do
  // not all fire together). For each stream whose ticker is due, sends a progress notification to
  // every watcher that asked for them, is caught up and was sent no event since that stream's
  // previous tick. So a new watch hears nothing for at least an interval, as with etcd. Returns how
  // long until the next ticker is due (at most an interval).
  absl::Duration NotifyProgress();
  // The client of `sink` asked for a progress notification: answered at once when every watcher
  // of the sink is caught up, otherwise as soon as the last lagging one is, so that it never names
  // a revision whose events a watcher has yet to get (etcd 3.4.25 and 3.5.8 defer it alike).
  void RequestProgress(WatchSink* sink);
  // Tells every sink that this member has been without a leader (etcd's require-leader streams).
  void NotifyNoLeader();

  int64_t published_revision() const;

  // For etcd's watch metrics, read at scrape time.
  struct Stats {
    size_t watchers = 0;
    size_t streams = 0;              // open streams (OpenStream, not yet RemoveAll)
    size_t slow_watchers = 0;        // lagging: to be caught up from history
    uint64_t pending_revisions = 0;  // revisions slow watchers have yet to be sent
    uint64_t events_sent = 0;        // since start, one per watcher per event
  };
  Stats stats() const;

  // The most revisions one response holds (etcd's watchBatchMaxRevs), so that a client with a
  // receive limit can follow a long history.
  static constexpr int kMaxRevisionsPerResponse = 1000;

 private:
  struct Watcher {
    WatchSpec spec;
    WatchSink* sink;
    int64_t next_revision;  // events below this were delivered (or precede the start)
    size_t connection = 0;  // the sink's connection (hashed), by which a fan-out orders sinks
    bool lagging = false;
    bool idle = true;        // no event sent since the last progress notification
    uint64_t collected = 0;  // the last WatchersOfKeysLocked call that listed it
  };
  static constexpr int kStreamsServedFirst = 4;  // by Publish, before its `midway`
  // A stream's watchers, by watch id. Node-based: the index points at them.
  using SinkWatchers = absl::node_hash_map<int64_t, Watcher>;
  bool Matches(const Watcher& w, const mvccpb::Event& event) const;
  // The watchers whose range holds the key of one of `events`, each once, those of one sink next to
  // each other and the sinks of one connection next to each other.
  std::vector<Watcher*> WatchersOfKeysLocked(const std::vector<mvccpb::Event>& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends each of `watchers` (not lagging; all of one sink) the events it matches and has not had
  // yet, at header revision `revision`; a watcher matching them all gets `shared` when that is set.
  // True if it sent any.
  bool ServeLocked(const std::vector<Watcher*>& watchers, size_t begin, size_t end,
                   const std::vector<mvccpb::Event>& events, const SharedEvents* shared,
                   int64_t revision) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  enum class Delivery { kNothing, kSent, kRefused };
  // Sends `w` those of `events` (ascending) it matches, at header revision `revision`: as `shared`
  // (their one encoding) when it matches them all and `shared` is set, else in responses of its
  // own. kRefused: the sink was full; what went before counts as delivered.
  Delivery DeliverMatchingLocked(Watcher& w, const std::vector<mvccpb::Event>& events,
                                 const SharedEvents* shared, int64_t revision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  enum class Replayed { kAll, kPartly, kSinkFull, kFailed };
  // History already read by one round of a catch-up (defined in the .cc).
  struct ReplayCache;
  // Delivers to `w` the next piece of the history it missed, [w.next_revision,
  // published_revision_], at most kMaxRevisionsPerResponse revisions long, reading it through
  // `cache` when one is given. kAll: it is caught up; kPartly: more is to come; kSinkFull: the
  // sink refused the piece; kFailed: history could not be read.
  Replayed ReplayPieceLocked(Watcher& w, ReplayCache* cache) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Delivers `events` (ascending) to `w` in responses of at most kMaxRevisionsPerResponse
  // revisions, with header revision `revision`. False when the sink refused one; what went before
  // it counts as delivered.
  bool SendLocked(Watcher& w, std::vector<mvccpb::Event> events, int64_t revision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Serves every stream watching the keys of `events` (one group, or several published while the
  // fan-out was busy), then moves published_revision_ to `revision`.
  void ServeAllLocked(const std::vector<mvccpb::Event>& events, int64_t revision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds a group to what the fan-out thread is to send (or, past kMaxBacklogBytes, notes that it
  // is to catch every watcher up from history instead).
  void HandOverLocked(const std::vector<mvccpb::Event>& events, int64_t revision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(backlog_mu_);
  // Every watcher is caught up from history to `revision` (Resync).
  void ResyncLocked(int64_t revision) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The fan-out thread: serves what Publish handed over, a round at a time, until the hub stops.
  void FanOutLoop();
  // Replays the lagging watchers of one sink (dropping those whose history was compacted), a piece
  // each per round, furthest behind first, until the sink is full again; the rest wait for its next
  // call.
  void CatchUpLocked(WatchSink* sink, SinkWatchers& watchers) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A round takes at most this many revisions from the backlog, so that its events stay one
  // shared response per watcher.
  static constexpr int64_t kMaxRevisionsPerRound = kMaxRevisionsPerResponse;
  // Past this size the backlog's events are dropped and every watcher is caught up from history
  // instead (where they also are): memory stays bounded when writes outrun the fan-out.
  static constexpr size_t kMaxBacklogBytes = 64 << 20;

  // mu_ for anyone but the fan-out thread. While it waits, the round holding mu_ goes on at the
  // waiter's priority rather than the fan-out workers' (see fan_out_).
  class ABSL_SCOPED_LOCKABLE CallerLock {
   public:
    explicit CallerLock(const WatchHub* hub) ABSL_EXCLUSIVE_LOCK_FUNCTION(hub->mu_);
    ~CallerLock() ABSL_UNLOCK_FUNCTION();
    CallerLock(const CallerLock&) = delete;
    CallerLock& operator=(const CallerLock&) = delete;

   private:
    const WatchHub* const hub_;
  };
  // A round without a write arriving goes on at normal priority (see fan_out_); one arrived.
  void EndQuietRoundLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(backlog_mu_);

  storage::StateMachine* const state_machine_;
  // A round hands each stream its responses from a few threads at once: with thousands of streams,
  // one thread doing every StartWrite (each a socket write) would be the fan-out's bottleneck.
  // Under writes, the workers serve at the lowest CPU priority: the writes go first, and the next
  // round covers more of them, each watcher getting one response for all (10,000 watchers on 100
  // streams with 16 writers: twice the events per second). The fan-out thread, at normal
  // priority, serves instead while hurry_ says so: while no write arrives during the round (a
  // quiet round waits for nobody), and while a caller waits for mu_, which the round holds.
  mutable ParallelFor fan_out_;
  mutable std::atomic<int> hurry_{0};  // callers waiting for mu_, plus one in a quiet round
  mutable absl::Mutex mu_;
  int64_t published_revision_ ABSL_GUARDED_BY(mu_);
  // Watchers by sink, then by watch id.
  absl::flat_hash_map<WatchSink*, SinkWatchers> watchers_ ABSL_GUARDED_BY(mu_);
  // Every watcher of watchers_, by its range: a publish visits only the watchers of its keys.
  KeyRangeIndex<Watcher> by_range_ ABSL_GUARDED_BY(mu_);
  uint64_t collections_ ABSL_GUARDED_BY(mu_) = 0;  // WatchersOfKeysLocked calls so far
  std::atomic<uint64_t> events_sent_{0};  // Stats::events_sent; the fan-out's threads add to it
  // Each open stream's progress ticker (steady-clock milliseconds), and the tickers by due time.
  struct ProgressTicker {
    int64_t due_ms;
    int64_t period_ms;
  };
  const int64_t progress_interval_ms_;
  absl::flat_hash_map<WatchSink*, ProgressTicker> tickers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<WatchSink*, size_t> connection_of_ ABSL_GUARDED_BY(mu_);  // OpenStream's
  // Sinks whose progress request waits for their lagging watchers (RequestProgress).
  absl::flat_hash_set<WatchSink*> progress_requested_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<int64_t, WatchSink*>> tickers_by_due_ ABSL_GUARDED_BY(mu_);
  absl::BitGen jitter_ ABSL_GUARDED_BY(mu_);
  // What Publish handed to the fan-out thread and it has not taken yet. Lock order: mu_, then
  // backlog_mu_; the fan-out thread never holds both.
  absl::Mutex backlog_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::vector<mvccpb::Event> backlog_ ABSL_GUARDED_BY(backlog_mu_);
  int64_t backlog_revision_ ABSL_GUARDED_BY(backlog_mu_) = 0;
  size_t backlog_bytes_ ABSL_GUARDED_BY(backlog_mu_) = 0;
  bool backlog_overflowed_ ABSL_GUARDED_BY(backlog_mu_) = false;  // events dropped: resync
  bool handed_ ABSL_GUARDED_BY(backlog_mu_) = false;  // the backlog holds work not yet taken
  // From a hand-over until the fan-out thread finds nothing left after a round: while set, Publish
  // serves nothing itself (a stream could otherwise get a group before an earlier one).
  bool fanning_out_ ABSL_GUARDED_BY(backlog_mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(backlog_mu_) = false;
  bool quiet_round_ ABSL_GUARDED_BY(backlog_mu_) = false;  // counted in hurry_
  std::thread fan_out_thread_;  // last: starts once everything it uses is built
};

}  // namespace leasehold::server
