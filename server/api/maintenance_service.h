// etcdserverpb.Maintenance (Status, Alarm, Defragment, Hash, HashKV, MoveLeader, Snapshot) for a
// member. Methods not overridden answer UNIMPLEMENTED.
#pragma once

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/member/member.h"

namespace leasehold::server {

// etcd's HashKV at request.revision() (0: the current one) from `member`'s applied history: the
// client port's answer, and the peer port's (initial_corrupt_check.h).
[[nodiscard]] absl::Status AnswerHashKv(Member& member, const etcdserverpb::HashKVRequest& request,
                                        etcdserverpb::HashKVResponse* response);

class MaintenanceService final : public etcdserverpb::Maintenance::CallbackService {
 public:
  explicit MaintenanceService(Member* member) : member_(member) {}
  grpc::ServerUnaryReactor* Status(grpc::CallbackServerContext* context,
                                   const etcdserverpb::StatusRequest* request,
                                   etcdserverpb::StatusResponse* response) override;
  // GET lists the raised alarms (of one type, or all for NONE) from this member's applied state;
  // ACTIVATE and DEACTIVATE go through the log and answer the alarm raised or cleared, as etcd's.
  grpc::ServerUnaryReactor* Alarm(grpc::CallbackServerContext* context,
                                  const etcdserverpb::AlarmRequest* request,
                                  etcdserverpb::AlarmResponse* response) override;
  // Compacts this member's storage engine; answers when done.
  grpc::ServerUnaryReactor* Defragment(grpc::CallbackServerContext* context,
                                       const etcdserverpb::DefragmentRequest* request,
                                       etcdserverpb::DefragmentResponse* response) override;
  // This member's hash of its replicated state (storage::StateMachine::HashAll): members that have
  // applied the same entries agree. Not etcd's value, which hashes etcd's own file.
  grpc::ServerUnaryReactor* Hash(grpc::CallbackServerContext* context,
                                 const etcdserverpb::HashRequest* request,
                                 etcdserverpb::HashResponse* response) override;
  // etcd's HashKV (`etcdctl endpoint hashkv`): a hash of the versions kept up to a revision, which
  // every member computes alike once it has applied that revision; with etcd's errors for a
  // compacted or future revision.
  grpc::ServerUnaryReactor* HashKV(grpc::CallbackServerContext* context,
                                   const etcdserverpb::HashKVRequest* request,
                                   etcdserverpb::HashKVResponse* response) override;
  // etcd 3.5's downgrade of the cluster version (`etcdctl downgrade validate|enable|cancel`), by
  // etcd's rules for the target (major.minor, one minor below the cluster version) and Leasehold's
  // for what it can run as: it serves one API version only, so no target is valid; with etcd's
  // errors ("wrong downgrade target version format", "invalid downgrade target version", "no
  // inflight downgrade job" for a cancel).
  grpc::ServerUnaryReactor* Downgrade(grpc::CallbackServerContext* context,
                                      const etcdserverpb::DowngradeRequest* request,
                                      etcdserverpb::DowngradeResponse* response) override;
  // Streams a backup of this member's replicated state (storage/backup/backup.h) in 64 KiB pieces,
  // from one consistent view taken when the call starts: what `etcdctl snapshot save` writes to its
  // file.
  grpc::ServerWriteReactor<etcdserverpb::SnapshotResponse>* Snapshot(
      grpc::CallbackServerContext* context, const etcdserverpb::SnapshotRequest* request) override;
  // Asks this member, which must be the leader, to hand leadership to `targetID`; answers once it
  // has.
  grpc::ServerUnaryReactor* MoveLeader(grpc::CallbackServerContext* context,
                                       const etcdserverpb::MoveLeaderRequest* request,
                                       etcdserverpb::MoveLeaderResponse* response) override;

 private:
  Member* member_;
};

}  // namespace leasehold::server
