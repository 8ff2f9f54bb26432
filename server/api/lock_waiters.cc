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
  Post(spec.watch_id, Action::kLook);
  return true;
}

bool LockWaiters::DeliverShared(const WatchSpec& spec, const SharedEvents&, int64_t) {
  Post(spec.watch_id, Action::kLook);
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
      if (!waiters_.contains(id)) continue;  // ended already
    }
    if (action == Action::kCancel) {
      End(id, absl::CancelledError("the call was cancelled"));
    } else {
      Look(id);
    }
  }
}

void LockWaiters::Look(int64_t id) {
  std::string prefix, key;
  int64_t create_revision;
  bool watching;
  {
    absl::MutexLock lock(&mu_);
    const Waiter& waiter = waiters_.at(id);
    prefix = waiter.prefix;
    key = waiter.key;
    create_revision = waiter.create_revision;
    watching = waiter.watching;
  }
  // Only this thread adds and removes the waiter's watcher, and ends waiters: no race with itself.
  if (watching) hub_->Remove(this, id);
  auto read = member_->state_machine().ReadOnlyTxn(AheadTxn(prefix, key, create_revision));
  if (!read.ok()) return End(id, read.status());
  const Ahead ahead = AheadOf(*read, create_revision);
  if (!ahead.queued) {
    return End(
        id, absl::FailedPreconditionError("the lease of " + key + " ended while it was waiting"));
  }
  if (ahead.key.empty()) return End(id, ahead.revision);
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
  absl::MutexLock lock(&mu_);
  waiters_.at(id).watching = true;
}

void LockWaiters::End(int64_t id, absl::StatusOr<int64_t> outcome) {
  Done done;
  bool watching;
  {
    absl::MutexLock lock(&mu_);
    auto it = waiters_.find(id);
    if (it == waiters_.end()) return;
    done = std::move(it->second.done);
    watching = it->second.watching;
    waiters_.erase(it);
  }
  if (watching) hub_->Remove(this, id);
  done(std::move(outcome));
}

}  // namespace leasehold::server
