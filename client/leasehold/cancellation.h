// A one-shot cancellation signal shared between the code that raises it (CancellationSource) and
// the code that must stop when it is raised (CancellationToken). Tokens are cheap copies of one
// state. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"

namespace leasehold {

class CancellationToken {
 public:
  // A token that is never cancelled.
  CancellationToken();

  bool cancelled() const;
  // Why it was cancelled; empty while it is not.
  std::string reason() const;
  // Blocks until cancelled or `timeout` passes; returns cancelled().
  bool WaitFor(absl::Duration timeout) const;

  // Runs `fn` once when the token is cancelled (at once, on this thread, if it already is). `fn`
  // runs under the token's lock: keep it short and never call back into the token from it. Returns
  // an id for Unsubscribe; after Unsubscribe returns, `fn` is not running and never will.
  int64_t OnCancel(std::function<void()> fn) const;
  void Unsubscribe(int64_t id) const;

 private:
  friend class CancellationSource;
  struct State;
  explicit CancellationToken(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

class CancellationSource {
 public:
  CancellationSource();
  CancellationToken token() const { return CancellationToken(state_); }
  // Cancels every token of this source; the first reason given sticks. Idempotent.
  void Cancel(const std::string& reason) const;

 private:
  std::shared_ptr<CancellationToken::State> state_;
};

}  // namespace leasehold
