#include "server/keep_alive_router.h"

#include <memory>
#include <utility>

#include <grpcpp/alarm.h>

#include "storage/etcd_errors.h"

namespace leasehold::server {
namespace {

constexpr absl::Duration kRetryInterval = absl::Milliseconds(50);

// One keep-alive on its way. Owned by whichever callback will run next: an answer's or the retry
// alarm's; the last one deletes it.
struct Routing {
  Member* member;
  etcdserverpb::LeaseKeepAliveRequest request;
  absl::Time give_up_at;
  std::function<bool()> wanted;
  Member::RenewDone done;
  // The pending retry's alarm. Replaced (and deleted) from inside its own callback, which gRPC
  // allows: the alarm's state is reference-counted and outlives the running callback.
  std::unique_ptr<grpc::Alarm> alarm;
};

void Attempt(Routing* routing);

void OnAnswer(Routing* routing, absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> answer) {
  if (answer.ok() || absl::Now() + kRetryInterval >= routing->give_up_at || !routing->wanted()) {
    routing->done(std::move(answer));
    delete routing;
    return;
  }
  // Nobody could answer: no leader yet, or one not ready, or gone. Try again shortly.
  routing->alarm = std::make_unique<grpc::Alarm>();
  routing->alarm->Set(absl::ToChronoTime(absl::Now() + kRetryInterval), [routing](bool) { Attempt(routing); });
}

void Attempt(Routing* routing) {
  Member* member = routing->member;
  auto on_answer = [routing](absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> answer) {
    OnAnswer(routing, std::move(answer));
  };
  const uint64_t leader = member->proposer().leader_id();
  if (leader == 0) {
    on_answer(errors::NoLeader());
  } else if (member->IsLeader()) {
    member->RenewLease(routing->request, std::move(on_answer));
  } else {
    member->forwarder().Renew(leader, routing->request, std::move(on_answer));
  }
}

}  // namespace

void RouteKeepAlive(Member* member, const etcdserverpb::LeaseKeepAliveRequest& request, absl::Time give_up_at,
                    std::function<bool()> wanted, Member::RenewDone done) {
  Attempt(new Routing{member, request, give_up_at, std::move(wanted), std::move(done), nullptr});
}

}  // namespace leasehold::server
