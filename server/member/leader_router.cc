#include "server/member/leader_router.h"

#include <utility>
#include <vector>

#include <grpcpp/alarm.h>

#include "absl/synchronization/mutex.h"
#include "common/etcd_errors.h"

namespace leasehold::server {
namespace {

constexpr absl::Duration kRetryInterval = absl::Milliseconds(50);

// One call on its way to the leader.
struct Routing {
  virtual ~Routing() = default;
  // Asks `leader` (this member or another). Ownership passes to the attempt: it ends in `done`
  // with the answer, or in Wait.
  virtual void Attempt(LeaderRouter::State* state, uint64_t leader,
                       std::unique_ptr<Routing> self) = 0;
  virtual void GiveUp(absl::Status error) = 0;
  // Whether an error from an attempt is worth waiting out (the default: any, the lease calls'
  // errors all mean "no member could answer").
  virtual bool Retryable(const absl::Status& error) const { return true; }

  absl::Time give_up_at;
  std::function<bool()> wanted;
};

}  // namespace

struct LeaderRouter::State {
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

using State = LeaderRouter::State;

void Round(State* state);

void Attempt(State* state, std::unique_ptr<Routing> routing);

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

// Whether `routing` should wait for a round starting at `next_round`: its wait is not over and it
// is still wanted.
bool WorthWaiting(Routing& routing, absl::Time next_round) {
  return next_round < routing.give_up_at && routing.wanted();
}

// Nobody could answer: wait for the next round, unless it is no longer worth it.
void Wait(State* state, std::unique_ptr<Routing> routing, absl::Status error) {
  if (!WorthWaiting(*routing, absl::Now() + kRetryInterval)) {
    routing->GiveUp(std::move(error));
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
  if (due.empty()) return;  // (the member may be going away: only waiting calls keep it)
  if (state->member->proposer().leader_id() != 0) {
    for (auto& routing : due) Attempt(state, std::move(routing));
    return;
  }
  // Still no leader: nothing to try. Let go of what waited long enough or is no longer wanted.
  const absl::Time next_round = absl::Now() + kRetryInterval;
  std::vector<std::unique_ptr<Routing>> still_waiting;
  for (auto& routing : due) {
    if (WorthWaiting(*routing, next_round)) {
      still_waiting.push_back(std::move(routing));
    } else {
      routing->GiveUp(errors::NoLeader());
    }
  }
  if (still_waiting.empty()) return;
  absl::MutexLock lock(&state->mu);
  for (auto& routing : still_waiting) state->waiting.push_back(std::move(routing));
  ArmLocked(state);
}

void Attempt(State* state, std::unique_ptr<Routing> routing) {
  const uint64_t leader = state->member->proposer().leader_id();
  if (leader == 0) return Wait(state, std::move(routing), errors::NoLeader());
  Routing* raw = routing.get();
  raw->Attempt(state, leader, std::move(routing));
}

// A routing whose answer is a `Response`.
template <typename Response>
struct RoutingFor : Routing {
  using Done = std::function<void(absl::StatusOr<Response>)>;

  // The callback for an answer from the leader: hands it on, or waits after an error. It takes
  // ownership of this routing when it runs. Two plain pointers, so that std::function keeps it
  // without allocating: the state outlives every routing (see the header).
  template <typename Self>
  auto AnswerOrWait(State* state, Self* self) {
    return [state, self](absl::StatusOr<Response> answer) {
      std::unique_ptr<Self> owned(self);
      if (answer.ok() || !owned->Retryable(answer.status())) return owned->done(std::move(answer));
      Wait(state, std::move(owned), answer.status());
    };
  }
  void GiveUp(absl::Status error) override { done(std::move(error)); }

  Done done;
};

struct KeepAlive final : RoutingFor<etcdserverpb::LeaseKeepAliveResponse> {
  void Attempt(State* state, uint64_t leader, std::unique_ptr<Routing> self) override {
    Member* member = state->member;
    etcdserverpb::LeaseKeepAliveRequest request;
    request.set_id(lease_id);
    auto on_answer = AnswerOrWait(state, this);
    self.release();  // owned by on_answer from here
    if (member->IsLeader()) {
      member->RenewLease(request, std::move(on_answer));
    } else {
      member->forwarder().Renew(leader, give_up_at, request, std::move(on_answer));
    }
  }

  int64_t lease_id;  // all a keep-alive request holds
};

struct TimeToLive final : RoutingFor<etcdserverpb::LeaseTimeToLiveResponse> {
  void Attempt(State* state, uint64_t leader, std::unique_ptr<Routing> self) override {
    Member* member = state->member;
    if (member->IsLeader()) {
      absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> answer =
          member->LeaseTimeToLive(request);
      // A leader unsure of its leadership cannot vouch for a remaining time.
      if (answer.ok()) return done(std::move(answer));
      return Wait(state, std::move(self), errors::NoLeader());
    }
    auto on_answer = AnswerOrWait(state, this);
    self.release();  // owned by on_answer from here
    member->forwarder().TimeToLive(leader, give_up_at, request, std::move(on_answer));
  }

  etcdserverpb::LeaseTimeToLiveRequest request;
};

// A membership change, decided by the leader (Member::AddMember and the like), to which any other
// member forwards it.
template <typename Request, typename Response>
struct ChangeRouting final : RoutingFor<Response> {
  using Done = std::function<void(absl::StatusOr<Response>)>;
  using OnLeader = void (Member::*)(const Request&, Done);
  using Forward = void (LeaderForwarder::*)(uint64_t, absl::Time, const Request&, Done);

  ChangeRouting(OnLeader on_leader, Forward forward) : on_leader(on_leader), forward(forward) {}

  void Attempt(State* state, uint64_t leader, std::unique_ptr<Routing> self) override {
    Member* member = state->member;
    auto on_answer = this->AnswerOrWait(state, this);
    self.release();  // owned by on_answer from here
    if (member->IsLeader()) {
      (member->*on_leader)(request, std::move(on_answer));
    } else {
      (member->forwarder().*forward)(leader, this->give_up_at, request, std::move(on_answer));
    }
  }
  // Only "no leader" (none known, or the forward found no member leading) is waited out. The
  // leader's refusals are final, "unhealthy cluster" (Unavailable too) included, and so is a change
  // whose outcome is unknown ("leader changed", "request timed out").
  bool Retryable(const absl::Status& error) const override { return error == errors::NoLeader(); }

  const OnLeader on_leader;
  const Forward forward;
  Request request;
};

template <typename Request, typename Response>
void RouteChange(State* state, const Request& request, std::function<bool()> wanted,
                 std::function<void(absl::StatusOr<Response>)> done,
                 void (Member::*on_leader)(const Request&,
                                           std::function<void(absl::StatusOr<Response>)>),
                 void (LeaderForwarder::*forward)(uint64_t, absl::Time, const Request&,
                                                  std::function<void(absl::StatusOr<Response>)>)) {
  auto routing = std::make_unique<ChangeRouting<Request, Response>>(on_leader, forward);
  routing->give_up_at = absl::Now() + state->max_wait;
  routing->wanted = std::move(wanted);
  routing->request = request;
  routing->done = std::move(done);
  Attempt(state, std::move(routing));
}

}  // namespace

LeaderRouter::LeaderRouter(Member* member, absl::Duration max_wait)
    : state_(std::make_shared<State>()) {
  state_->self = state_;
  state_->member = member;
  state_->max_wait = max_wait;
}

LeaderRouter::~LeaderRouter() {
  // Every call has finished, so nothing waits. Cancelling may run the alarm's callback at once,
  // which takes the mutex: drop the alarm outside it. A round already running holds the state.
  std::unique_ptr<grpc::Alarm> timer;
  {
    absl::MutexLock lock(&state_->mu);
    timer = std::move(state_->timer);
  }
}

void LeaderRouter::RenewLease(const etcdserverpb::LeaseKeepAliveRequest& request,
                              std::function<bool()> wanted, Member::RenewDone done) {
  auto routing = std::make_unique<KeepAlive>();
  routing->give_up_at = absl::Now() + state_->max_wait;
  routing->wanted = std::move(wanted);
  routing->lease_id = request.id();
  routing->done = std::move(done);
  Attempt(state_.get(), std::move(routing));
}

void LeaderRouter::LeaseTimeToLive(const etcdserverpb::LeaseTimeToLiveRequest& request,
                                   std::function<bool()> wanted, TimeToLiveDone done) {
  auto routing = std::make_unique<TimeToLive>();
  routing->give_up_at = absl::Now() + state_->max_wait;
  routing->wanted = std::move(wanted);
  routing->request = request;
  routing->done = std::move(done);
  Attempt(state_.get(), std::move(routing));
}

void LeaderRouter::AddMember(const etcdserverpb::MemberAddRequest& request,
                             std::function<bool()> wanted,
                             Member::ChangeDone<etcdserverpb::MemberAddResponse> done) {
  RouteChange(state_.get(), request, std::move(wanted), std::move(done), &Member::AddMember,
              &LeaderForwarder::AddMember);
}

void LeaderRouter::RemoveMember(const etcdserverpb::MemberRemoveRequest& request,
                                std::function<bool()> wanted,
                                Member::ChangeDone<etcdserverpb::MemberRemoveResponse> done) {
  RouteChange(state_.get(), request, std::move(wanted), std::move(done), &Member::RemoveMember,
              &LeaderForwarder::RemoveMember);
}

void LeaderRouter::PromoteLearner(const etcdserverpb::MemberPromoteRequest& request,
                                  std::function<bool()> wanted,
                                  Member::ChangeDone<etcdserverpb::MemberPromoteResponse> done) {
  RouteChange(state_.get(), request, std::move(wanted), std::move(done), &Member::PromoteLearner,
              &LeaderForwarder::PromoteLearner);
}

}  // namespace leasehold::server
