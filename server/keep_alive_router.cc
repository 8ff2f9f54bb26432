#include "server/keep_alive_router.h"

#include <utility>
#include <vector>

#include <grpcpp/alarm.h>

#include "absl/synchronization/mutex.h"
#include "storage/etcd_errors.h"

namespace leasehold::server {
namespace {

constexpr absl::Duration kRetryInterval = absl::Milliseconds(50);

// One keep-alive on its way.
struct Routing {
  int64_t lease_id;  // all a keep-alive request holds
  absl::Time give_up_at;
  std::function<bool()> wanted;
  Member::RenewDone done;
};

}  // namespace

struct KeepAliveRouter::State {
  std::weak_ptr<State> self;  // for the timer's callback, which may outlive the router
  Member* member;
  absl::Duration max_wait;
  absl::Mutex mu;
  std::vector<std::unique_ptr<Routing>> waiting ABSL_GUARDED_BY(mu);
  // The timer of the next round. Replaced from inside its own callback, which gRPC allows: an
  // alarm's state is reference-counted and outlives its running callback.
  std::unique_ptr<grpc::Alarm> timer ABSL_GUARDED_BY(mu);
  bool round_due ABSL_GUARDED_BY(mu) = false;
};

namespace {

using State = KeepAliveRouter::State;

void Attempt(State* state, std::unique_ptr<Routing> routing);
void Round(State* state);

// Makes sure a round is due within kRetryInterval.
void ArmLocked(State* state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
  if (state->round_due) return;
  state->round_due = true;
  // The previous alarm has fired (no round is due), so dropping it cancels nothing.
  state->timer = std::make_unique<grpc::Alarm>();
  state->timer->Set(absl::ToChronoTime(absl::Now() + kRetryInterval), [weak = state->self](bool) {
    if (auto alive = weak.lock()) Round(alive.get());  // a round running keeps the state
  });
}

// Nobody could answer: wait for the next round, unless the wait is over or no longer wanted.
void Wait(State* state, std::unique_ptr<Routing> routing, absl::Status error) {
  if (absl::Now() + kRetryInterval >= routing->give_up_at || !routing->wanted()) {
    routing->done(std::move(error));
    return;
  }
  absl::MutexLock lock(&state->mu);
  state->waiting.push_back(std::move(routing));
  ArmLocked(state);
}

void Round(State* state) {
  std::vector<std::unique_ptr<Routing>> due;
  {
    absl::MutexLock lock(&state->mu);
    state->round_due = false;
    due.swap(state->waiting);
  }
  if (due.empty()) return;  // (the member may be going away: only waiting requests keep it)
  if (state->member->proposer().leader_id() != 0) {
    for (auto& routing : due) Attempt(state, std::move(routing));
    return;
  }
  // Still no leader: nothing to try. Let go of what waited long enough or is no longer wanted.
  const absl::Time next_round = absl::Now() + kRetryInterval;
  std::vector<std::unique_ptr<Routing>> still_waiting;
  for (auto& routing : due) {
    if (next_round >= routing->give_up_at || !routing->wanted()) {
      routing->done(errors::NoLeader());
    } else {
      still_waiting.push_back(std::move(routing));
    }
  }
  if (still_waiting.empty()) return;
  absl::MutexLock lock(&state->mu);
  for (auto& routing : still_waiting) state->waiting.push_back(std::move(routing));
  ArmLocked(state);
}

void Attempt(State* state, std::unique_ptr<Routing> routing) {
  Member* member = state->member;
  const uint64_t leader = member->proposer().leader_id();
  if (leader == 0) return Wait(state, std::move(routing), errors::NoLeader());
  Routing* raw = routing.release();  // owned by the answer's callback from here
  // Two plain pointers, so that std::function keeps the callback without allocating: the state
  // outlives every routing (see the header).
  auto on_answer = [state, raw](absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> answer) {
    std::unique_ptr<Routing> routing(raw);
    if (answer.ok()) return routing->done(std::move(answer));
    Wait(state, std::move(routing), answer.status());
  };
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(raw->lease_id);
  if (member->IsLeader()) {
    member->RenewLease(request, std::move(on_answer));
  } else {
    member->forwarder().Renew(leader, request, std::move(on_answer));
  }
}

}  // namespace

KeepAliveRouter::KeepAliveRouter(Member* member, absl::Duration max_wait) : state_(std::make_shared<State>()) {
  state_->self = state_;
  state_->member = member;
  state_->max_wait = max_wait;
}

KeepAliveRouter::~KeepAliveRouter() {
  // Every stream has finished, so nothing waits. Cancelling may run the alarm's callback at once,
  // which takes the mutex: drop the alarm outside it. A round already running holds the state.
  std::unique_ptr<grpc::Alarm> timer;
  {
    absl::MutexLock lock(&state_->mu);
    timer = std::move(state_->timer);
  }
}

void KeepAliveRouter::Route(const etcdserverpb::LeaseKeepAliveRequest& request, std::function<bool()> wanted,
                            Member::RenewDone done) {
  auto routing = std::make_unique<Routing>();
  routing->lease_id = request.id();
  routing->give_up_at = absl::Now() + state_->max_wait;
  routing->wanted = std::move(wanted);
  routing->done = std::move(done);
  Attempt(state_.get(), std::move(routing));
}

}  // namespace leasehold::server
