#include "server/member/renew_batcher.h"

#include <algorithm>
#include <utility>

#include "common/etcd_errors.h"
#include "leasehold/peer.grpc.pb.h"

namespace leasehold::server {

// One LeaseRenewMany call: what gRPC needs until it returns.
class RenewBatcher::Call {
 public:
  grpc::ClientContext context;
  peerpb::LeaseRenewBatch request;
  peerpb::LeaseRenewResults response;
  std::unique_ptr<peerpb::RaftPeer::Stub> stub;
};

RenewBatcher::RenewBatcher(ChannelSource channels, int64_t timeout_ms, RenewOne renew_one)
    : channels_(std::move(channels)), timeout_ms_(timeout_ms), renew_one_(std::move(renew_one)) {}

RenewBatcher::~RenewBatcher() {
  // Calls in flight come back to this object; each has a deadline, so this wait ends.
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](absl::flat_hash_map<uint64_t, Queue>* queues) {
        return std::none_of(queues->begin(), queues->end(),
                            [](const auto& entry) { return entry.second.in_flight; });
      },
      &queues_));
}

void RenewBatcher::Renew(uint64_t leader, absl::Time give_up_at,
                         const etcdserverpb::LeaseKeepAliveRequest& request, Done done) {
  if (leader == 0) {
    done(errors::NoLeader());
    return;
  }
  std::vector<Pending> batch;
  {
    absl::MutexLock lock(&mu_);
    Queue& queue = queues_[leader];
    if (!queue.unsupported) {
      queue.waiting.push_back(Pending{request, give_up_at, std::move(done)});
      if (queue.in_flight) return;  // goes with the next call
      queue.in_flight = true;
      batch = NextBatchLocked(queue);
    }
  }
  if (batch.empty()) {
    renew_one_(leader, give_up_at, request, std::move(done));
    return;
  }
  Send(leader, std::move(batch));
}

std::vector<RenewBatcher::Pending> RenewBatcher::NextBatchLocked(Queue& queue) {
  std::vector<Pending> batch;
  if (queue.waiting.size() <= kMaxBatch) {
    batch.swap(queue.waiting);
  } else {
    batch.assign(std::make_move_iterator(queue.waiting.begin()),
                 std::make_move_iterator(queue.waiting.begin() + kMaxBatch));
    queue.waiting.erase(queue.waiting.begin(), queue.waiting.begin() + kMaxBatch);
  }
  if (batch.empty()) queue.in_flight = false;
  return batch;
}

void RenewBatcher::Send(uint64_t leader, std::vector<Pending> batch) {
  // The renewals whose callers have given up are answered "no leader" without being sent, as a
  // forwarded LeaseRenew would be; the call waits as long as the most patient of the rest.
  const absl::Time now = absl::Now();
  std::vector<Pending> late;
  auto patient = std::partition(batch.begin(), batch.end(),
                                [now](const Pending& p) { return p.give_up_at > now; });
  late.assign(std::make_move_iterator(patient), std::make_move_iterator(batch.end()));
  batch.erase(patient, batch.end());
  for (Pending& p : late) p.done(errors::NoLeader());

  std::shared_ptr<grpc::Channel> channel = channels_(leader);
  if (batch.empty() || channel == nullptr) {
    OnReturn(leader, std::move(batch),
             grpc::Status(grpc::StatusCode::UNAVAILABLE, "no channel to the leader"), nullptr);
    return;
  }
  absl::Time give_up_at = now;
  auto* call = new Call;
  for (const Pending& p : batch) {
    give_up_at = std::max(give_up_at, p.give_up_at);
    *call->request.add_requests() = p.request;
  }
  call->stub = peerpb::RaftPeer::NewStub(channel);
  call->context.set_deadline(
      absl::ToChronoTime(std::min(give_up_at, now + absl::Milliseconds(timeout_ms_))));
  auto* held = new std::vector<Pending>(std::move(batch));
  call->stub->async()->LeaseRenewMany(&call->context, &call->request, &call->response,
                                      [this, leader, call, held](grpc::Status status) {
                                        std::vector<Pending> answered = std::move(*held);
                                        delete held;
                                        OnReturn(leader, std::move(answered), status, call);
                                      });
}

void RenewBatcher::OnReturn(uint64_t leader, std::vector<Pending> batch, const grpc::Status& status,
                            Call* call) {
  const bool unsupported = status.error_code() == grpc::StatusCode::UNIMPLEMENTED;
  std::vector<Pending> next;
  std::vector<Pending> redirected;  // to the per-call path, once the leader is known not to batch
  {
    absl::MutexLock lock(&mu_);
    Queue& queue = queues_[leader];
    if (unsupported) {
      queue.unsupported = true;
      redirected.swap(queue.waiting);
      queue.in_flight = false;
    } else {
      next = NextBatchLocked(queue);
    }
  }
  const bool complete = status.ok() && call != nullptr &&
                        call->response.outcomes_size() == static_cast<int>(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    Pending& p = batch[i];
    if (unsupported) {
      renew_one_(leader, p.give_up_at, p.request, std::move(p.done));
    } else if (!complete) {
      // Unreachable, deposed or timed out: to the client, no leader right now (a renewal is
      // harmless to resend).
      p.done(errors::NoLeader());
    } else {
      peerpb::LeaseRenewOutcome* outcome = call->response.mutable_outcomes(static_cast<int>(i));
      if (outcome->code() == 0) {
        p.done(std::move(*outcome->mutable_response()));
      } else if (outcome->code() == static_cast<int32_t>(grpc::StatusCode::NOT_FOUND)) {
        p.done(absl::NotFoundError(outcome->message()));
      } else {
        p.done(errors::NoLeader());
      }
    }
  }
  delete call;
  for (Pending& p : redirected) renew_one_(leader, p.give_up_at, p.request, std::move(p.done));
  if (!next.empty()) Send(leader, std::move(next));
}

}  // namespace leasehold::server
