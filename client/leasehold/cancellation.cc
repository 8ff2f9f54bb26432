#include "client/leasehold/cancellation.h"

#include <map>

#include "absl/synchronization/mutex.h"

namespace leasehold {

struct CancellationToken::State {
  absl::Mutex mu;
  bool cancelled ABSL_GUARDED_BY(mu) = false;
  std::string reason ABSL_GUARDED_BY(mu);
  int64_t next_id ABSL_GUARDED_BY(mu) = 1;
  std::map<int64_t, std::function<void()>> callbacks ABSL_GUARDED_BY(mu);
};

CancellationToken::CancellationToken() : state_(std::make_shared<State>()) {}

bool CancellationToken::cancelled() const {
  absl::MutexLock lock(&state_->mu);
  return state_->cancelled;
}

std::string CancellationToken::reason() const {
  absl::MutexLock lock(&state_->mu);
  return state_->reason;
}

bool CancellationToken::WaitFor(absl::Duration timeout) const {
  absl::MutexLock lock(&state_->mu);
  state_->mu.AwaitWithTimeout(absl::Condition(&state_->cancelled), timeout);
  return state_->cancelled;
}

int64_t CancellationToken::OnCancel(std::function<void()> fn) const {
  absl::MutexLock lock(&state_->mu);
  if (state_->cancelled) {
    fn();
    return 0;
  }
  const int64_t id = state_->next_id++;
  state_->callbacks.emplace(id, std::move(fn));
  return id;
}

void CancellationToken::Unsubscribe(int64_t id) const {
  absl::MutexLock lock(&state_->mu);
  state_->callbacks.erase(id);
}

CancellationSource::CancellationSource() : state_(std::make_shared<CancellationToken::State>()) {}

void CancellationSource::Cancel(const std::string& reason) const {
  absl::MutexLock lock(&state_->mu);
  if (state_->cancelled) return;
  state_->cancelled = true;
  state_->reason = reason;
  // Run under the lock so that Unsubscribe, once it returns, guarantees no callback is mid-flight.
  for (auto& [id, fn] : state_->callbacks) fn();
  state_->callbacks.clear();
}

}  // namespace leasehold
