// RenewBatcher: a follower's keep-alives on their way to the leader, sent together. While one
// RaftPeer.LeaseRenewMany call to a leader is in flight, the renewals that arrive queue up and go
// as the next call when it returns (group commit, no timer), so a follower under load makes one
// peer call per round trip instead of one unary call per keep-alive; an idle follower sends each
// renewal at once. A leader that does not know LeaseRenewMany (UNIMPLEMENTED: an older member) is
// remembered, and the renewals meant for it go through the per-call path the owner supplies.
//
// Thread-safe. Callbacks run on gRPC's threads (or inline) and must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "etcdserverpb/rpc.pb.h"

namespace leasehold::server {

class RenewBatcher {
 public:
  using Done = std::function<void(absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse>)>;
  using ChannelSource = std::function<std::shared_ptr<grpc::Channel>(uint64_t id)>;
  // The one-call-per-renewal path, for leaders without LeaseRenewMany.
  using RenewOne = std::function<void(uint64_t leader, absl::Time give_up_at,
                                      const etcdserverpb::LeaseKeepAliveRequest&, Done)>;

  RenewBatcher(ChannelSource channels, int64_t timeout_ms, RenewOne renew_one);
  ~RenewBatcher();

  // Renews `request.id()` through `leader`. `done` gets the leader's answer, NotFound for a lease
  // the leader does not know, or etcd's "no leader" when the leader cannot be reached or no longer
  // leads (as a forwarded LeaseRenew would).
  void Renew(uint64_t leader, absl::Time give_up_at,
             const etcdserverpb::LeaseKeepAliveRequest& request, Done done);

  // Most renewals in one call: a bound on the message, far above what 2 cores fill in one trip.
  static constexpr size_t kMaxBatch = 4096;

 private:
  struct Pending {
    etcdserverpb::LeaseKeepAliveRequest request;
    absl::Time give_up_at;
    Done done;
  };
  struct Queue {
    bool in_flight = false;
    bool unsupported = false;  // the leader answered UNIMPLEMENTED
    std::vector<Pending> waiting;
  };
  class Call;

  // Sends `batch` to `leader`; on its return, answers it and sends what queued meanwhile.
  void Send(uint64_t leader, std::vector<Pending> batch);
  void OnReturn(uint64_t leader, std::vector<Pending> batch, const grpc::Status& status,
                Call* call);
  // Takes up to kMaxBatch waiting renewals for the next call; clears in_flight when none wait.
  std::vector<Pending> NextBatchLocked(Queue& queue) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ChannelSource channels_;
  const int64_t timeout_ms_;
  const RenewOne renew_one_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Queue> queues_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasehold::server
