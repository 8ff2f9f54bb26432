// LeaderRouter: takes the leader-only calls (lease keep-alive and time-to-live, membership
// changes) to the member that can answer them, waiting out a failover.
//
// The leader answers (Member::RenewLease, LeaseTimeToLive, AddMember, ...); any other member
// forwards to the leader it knows. While no member can answer (no leader is known yet, the leader
// is not yet sure of its leadership or has not yet taken over the leases, the forward reached a
// member that is gone or no longer leads), the call waits and is tried again every 50 ms, for up to
// `max_wait` (etcd's request timeout), as etcd's LeaseRenew and LeaseTimeToLive wait for a leader;
// a forward sent meanwhile is given only what is left of that wait, so the whole call stays within
// it. A keep-alive that arrives during an election is thus answered as soon as the new leader can
// renew, rather than dropped, leaving the lease to the client's next attempt, which may come too
// late for a lease with little time left.
//
// Waiting calls share one timer, and while no leader is known a round only checks whether each is
// still wanted, so calls waiting through a long loss of quorum cost next to no CPU; each keep-alive
// stream bounds how many of its requests wait at once.
//
// Thread-safe. Must outlive every call's `done` (the lease and cluster services own one each, and
// gRPC finishes every call before the service goes).
#pragma once

#include <functional>
#include <memory>

#include "absl/time/time.h"
#include "etcdserverpb/rpc.pb.h"
#include "server/member/member.h"

namespace leasehold::server {

class LeaderRouter {
 public:
  LeaderRouter(Member* member, absl::Duration max_wait);
  ~LeaderRouter();
  LeaderRouter(const LeaderRouter&) = delete;
  LeaderRouter& operator=(const LeaderRouter&) = delete;

  // `done` runs exactly once, possibly inline, possibly later on one of gRPC's threads: with the
  // answer, or with the last error once the wait has run out or `wanted` (asked before every retry,
  // e.g. "the stream is still open") has returned false.
  void RenewLease(const etcdserverpb::LeaseKeepAliveRequest& request, std::function<bool()> wanted,
                  Member::RenewDone done);
  using TimeToLiveDone = std::function<void(absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse>)>;
  void LeaseTimeToLive(const etcdserverpb::LeaseTimeToLiveRequest& request,
                       std::function<bool()> wanted, TimeToLiveDone done);
  // etcd's membership changes, decided by the leader: only "no leader" is waited out. (A forward
  // whose connection broke counts as "no leader" and is tried again; should the change have been
  // applied, the member table's checks refuse the repeat.)
  void AddMember(const etcdserverpb::MemberAddRequest& request, std::function<bool()> wanted,
                 Member::ChangeDone<etcdserverpb::MemberAddResponse> done);
  void RemoveMember(const etcdserverpb::MemberRemoveRequest& request, std::function<bool()> wanted,
                    Member::ChangeDone<etcdserverpb::MemberRemoveResponse> done);
  void PromoteLearner(const etcdserverpb::MemberPromoteRequest& request,
                      std::function<bool()> wanted,
                      Member::ChangeDone<etcdserverpb::MemberPromoteResponse> done);

  struct State;

 private:
  const std::shared_ptr<State> state_;  // shared with the timer's callback
};

}  // namespace leasehold::server
