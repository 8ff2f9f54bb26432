// LeaderForwarder: a follower's path to the leader for the calls only the leader can answer (lease
// keep-alive and time-to-live, membership changes), over the leader's peer port
// (RaftPeer.LeaseRenewMany, LeaseTimeToLive, MemberAdd, MemberRemove, MemberPromote; keep-alives
// go in batches, see RenewBatcher, or one LeaseRenew each to a leader without batches). Calls are
// asynchronous; a call that cannot reach a leader, or reaches a member that no longer leads,
// completes with etcd's "no leader". Each call's deadline is the earlier of `give_up_at` (the
// caller's own, so that waiting for a leader and the forward together stay within etcd's request
// timeout) and the forwarder's timeout.
//
// Thread-safe. Callbacks run on gRPC's threads and must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "etcdserverpb/rpc.pb.h"

namespace leasehold::server {

class RenewBatcher;

class LeaderForwarder {
 public:
  // Returns a channel to member `id`'s peer port (null when unknown).
  using ChannelSource = std::function<std::shared_ptr<grpc::Channel>(uint64_t id)>;
  LeaderForwarder(ChannelSource channels, int64_t timeout_ms);
  ~LeaderForwarder();

  void Renew(uint64_t leader, absl::Time give_up_at,
             const etcdserverpb::LeaseKeepAliveRequest& request,
             std::function<void(absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse>)> done);
  void TimeToLive(uint64_t leader, absl::Time give_up_at,
                  const etcdserverpb::LeaseTimeToLiveRequest& request,
                  std::function<void(absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse>)> done);
  // Membership changes. The leader's own refusal (e.g. etcd's "unhealthy cluster") arrives with its
  // code and message; "no leader" means the call never reached a leader. A call lost on the way
  // back leaves the outcome unknown: etcd's "leader changed" or, past the deadline, "request timed
  // out".
  void AddMember(uint64_t leader, absl::Time give_up_at,
                 const etcdserverpb::MemberAddRequest& request,
                 std::function<void(absl::StatusOr<etcdserverpb::MemberAddResponse>)> done);
  void RemoveMember(uint64_t leader, absl::Time give_up_at,
                    const etcdserverpb::MemberRemoveRequest& request,
                    std::function<void(absl::StatusOr<etcdserverpb::MemberRemoveResponse>)> done);
  void PromoteLearner(
      uint64_t leader, absl::Time give_up_at, const etcdserverpb::MemberPromoteRequest& request,
      std::function<void(absl::StatusOr<etcdserverpb::MemberPromoteResponse>)> done);

 private:
  // One LeaseRenew call per keep-alive: the path to a leader that does not batch.
  void RenewOne(uint64_t leader, absl::Time give_up_at,
                const etcdserverpb::LeaseKeepAliveRequest& request,
                std::function<void(absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse>)> done);

  const ChannelSource channels_;
  const int64_t timeout_ms_;
  std::unique_ptr<RenewBatcher> renewals_;
};

}  // namespace leasehold::server
