#include "server/api/lock_waiters.h"

#include <tuple>

#include "client/leasehold/queue_wait.h"

namespace leasehold::server {

LockWaiters::LockWaiters(Member* member, WatchHub* hub)
    : member_(member), hub_(hub), thread_([this] { Run(); }) {}

LockWaiters::~LockWaiters() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
  hub_->RemoveAll(this);
  std::unordered_map<int64_t, Waiter> left;
  {
    absl::MutexLock lock(&mu_);
    left.swap(waiters_);
  }
  for (auto& [id, waiter] : left) waiter.done(absl::UnavailableError("etcdserver: server stopped"));
}

int64_t LockWaiters::Wait(std::string prefix, std::string key, int64_t create_revision, Done done) {
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    waiters_[id] = Waiter{std::move(prefix), std::move(key), create_revision, std::move(done)};
  }
  Post(id, Action::kLook);
  return id;
}

void LockWaiters::Cancel(int64_t id) { Post(id, Action::kCancel); }

bool LockWaiters::Deliver(const WatchSpec& spec, std::vector<mvccpb::Event>, int64_t) {
  Heard(spec.watch_id);
  return true;
}

bool LockWaiters::DeliverShared(const WatchSpec& spec, const SharedEvents&, int64_t) {
  Heard(spec.watch_id);
  return true;
}

void LockWaiters::Compacted(int64_t watch_id, int64_t) { Post(watch_id, Action::kLook); }

void LockWaiters::Post(int64_t id, Action action) {
  {
    absl::MutexLock lock(&mu_);
    actions_.emplace_back(id, action);
  }
}

void LockWaiters::Run() {
  while (true) {
    int64_t id;
    Action action;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](LockWaiters* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stopping_ || !self->actions_.empty();
          },
          this));
      if (stopping_) return;
      std::tie(id, action) = actions_.front();
      actions_.pop_front();
      if (action != Action::kUnwatch && !waiters_.contains(id)) continue;  // ended already
    }
    if (action == Action::kUnwatch) {
      hub_->Remove(this, id);
    } else if (action == Action::kCancel) {
      End(id, absl::CancelledError("the call was cancelled"));
    } else {
      Look(id);
    }
  }
}

std::optional<absl::StatusOr<int64_t>> LockWaiters::Outcome(
    const absl::StatusOr<etcdserverpb::TxnResponse>& read, const std::string& key,
    int64_t create_revision) {
  if (!read.ok()) return read.status();
  const Ahead ahead = AheadOf(*read, create_revision);
  if (!ahead.queued) {
    return absl::FailedPreconditionError("the lease of " + key + " ended while it was waiting");
  }
  if (ahead.key.empty()) return ahead.revision;
  return std::nullopt;
}

void LockWaiters::Heard(int64_t id) {
  std::string prefix, key;
  int64_t create_revision;
  {
    absl::MutexLock lock(&mu_);
    auto it = waiters_.find(id);
    if (it == waiters_.end()) return;  // answered already; its watcher is on its way out
    prefix = it->second.prefix;
    key = it->second.key;
    create_revision = it->second.create_revision;
  }
  auto read = member_->state_machine().ReadOnlyTxn(AheadTxn(prefix, key, create_revision));
  std::optional<absl::StatusOr<int64_t>> outcome = Outcome(read, key, create_revision);
  // Another key is ahead (the thread watches it), or the wait failed: a failed Lock call proposes
  // the removal of its key, which must not happen under the hub's lock.
  if (!outcome || !outcome->ok()) return Post(id, Action::kLook);
  Done done;
  bool watching;
  if (!Take(id, &done, &watching)) return;  // the thread ended it meanwhile
  // Whether or not Look's Add has marked it yet, the hub holds a watcher for it: drop it later,
  // outside the hub's lock.
  Post(id, Action::kUnwatch);
  done(*std::move(outcome));
}

void LockWaiters::Look(int64_t id) {
  std::string prefix, key;
  int64_t create_revision;
  bool watching;
  {
    absl::MutexLock lock(&mu_);
    auto it = waiters_.find(id);
    if (it == waiters_.end()) return;  // answered from a delivery meanwhile
    prefix = it->second.prefix;
    key = it->second.key;
    create_revision = it->second.create_revision;
    watching = it->second.watching;
  }
  // Only this thread adds and removes watchers: no race with itself.
  if (watching) hub_->Remove(this, id);
  auto read = member_->state_machine().ReadOnlyTxn(AheadTxn(prefix, key, create_revision));
  if (auto outcome = Outcome(read, key, create_revision)) return End(id, *std::move(outcome));
  const Ahead ahead = AheadOf(*read, create_revision);
  WatchSpec spec;
  spec.watch_id = id;
  spec.key = ahead.key;
  spec.start_revision = ahead.revision + 1;
  spec.no_put = true;
  int64_t current = 0, compacted = 0;
  if (!hub_->Add(this, spec, &current, &compacted).ok()) {
    Post(id, Action::kLook);  // compacted meanwhile: look again at what is there now
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = waiters_.find(id);
    if (it != waiters_.end()) {
      it->second.watching = true;
      return;
    }
  }
  // Answered from a delivery while Add replayed history (its kUnwatch may have run already).
  hub_->Remove(this, id);
}

bool LockWaiters::Take(int64_t id, Done* done, bool* watching) {
  absl::MutexLock lock(&mu_);
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return false;
  *done = std::move(it->second.done);
  *watching = it->second.watching;
  waiters_.erase(it);
  return true;
}

void LockWaiters::End(int64_t id, absl::StatusOr<int64_t> outcome) {
  Done done;
  bool watching;
  if (!Take(id, &done, &watching)) return;
  if (watching) hub_->Remove(this, id);
  done(std::move(outcome));
}

}  // namespace leasehold::server
