// Contended Lock calls, waited for without a thread each. A waiter watches, as a watcher of this
// sink on the member's WatchHub, the deletion of the key just ahead of its own; when that key goes
// (or its history is compacted away) the waiter looks again in the member's applied state, and once
// no key created before its own remains, the lock is its. The reads are local on purpose: "no older
// key" stays true once it is (later keys are created later), so any member's applied state decides
// it as surely as the leader's, and the lock passes as the release is applied here.
//
// Thread-safe. Watchers are added and removed only on the sink's own thread. When the hub delivers
// the deletion of the key ahead, the look happens right there, under the hub's lock (which already
// reads the store under it): if no key is left ahead, the waiter is answered at once, without
// waiting for the sink's thread to wake (one thread switch less in each hand-over); otherwise, and
// for everything else, the thread looks.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/member/member.h"
#include "server/watch/watch_hub.h"

namespace leasehold::server {

class LockWaiters final : public WatchSink {
 public:
  // Gets the revision at which the key was first; FailedPrecondition when the key is gone (its
  // lease ended), Cancelled after Cancel, Unavailable when the server stops.
  using Done = std::function<void(absl::StatusOr<int64_t> held_at)>;

  LockWaiters(Member* member, WatchHub* hub);
  ~LockWaiters() override;

  // Waits until `key`, created at `create_revision`, is the oldest key under `prefix`. Returns an
  // id for Cancel. `done` is called exactly once, on the sink's thread.
  int64_t Wait(std::string prefix, std::string key, int64_t create_revision, Done done);
  // Ends the wait with Cancelled, unless it has ended already. Never blocks on the hub.
  void Cancel(int64_t id);

  // WatchSink: any event of a watched key means it changed; the look that follows decides.
  bool Deliver(const WatchSpec& spec, std::vector<mvccpb::Event> events, int64_t revision) override;
  bool DeliverShared(const WatchSpec& spec, const SharedEvents& events, int64_t revision) override;
  void Progress(int64_t, int64_t) override {}
  void RequestedProgress(int64_t) override {}
  void Compacted(int64_t watch_id, int64_t compact_revision) override;
  void NoLeader() override {}

 private:
  struct Waiter {
    std::string prefix, key;
    int64_t create_revision = 0;
    Done done;
    bool watching = false;
  };
  // kUnwatch: remove the watcher of a waiter answered from a delivery (the hub's lock was held).
  enum class Action { kLook, kCancel, kUnwatch };

  void Post(int64_t id, Action action);
  void Run();
  // Reads who is ahead of the waiter: answers it, or watches the key ahead.
  void Look(int64_t id);
  // The waiter's watched key changed (called by the hub, under its lock): answers the waiter when
  // nobody is ahead of it any more, else (a key still ahead, or a failure) leaves it to the thread.
  void Heard(int64_t id);
  // What the waiter's read says, when it ends the wait: the outcome. Nothing when a key is ahead.
  static std::optional<absl::StatusOr<int64_t>> Outcome(
      const absl::StatusOr<etcdserverpb::TxnResponse>& read, const std::string& key,
      int64_t create_revision);
  // Takes the waiter out of the map; its callback, and whether its watcher is registered.
  bool Take(int64_t id, Done* done, bool* watching);
  void End(int64_t id, absl::StatusOr<int64_t> outcome);

  Member* const member_;
  WatchHub* const hub_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::unordered_map<int64_t, Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<int64_t, Action>> actions_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace leasehold::server
