// etcdserverpb.Cluster: the member list from the replicated member table, and membership changes
// (add, remove, promote) proposed one at a time through the log; a promotion is decided by the
// leader, to which a follower forwards it. MemberUpdate (new peer URLs for a member) is an ordinary
// entry: it does not change Raft's configuration. Also served on the peer port, where a member
// joining with --initial-cluster-state existing looks up its id.
#pragma once

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/leader_router.h"
#include "server/member.h"

namespace leasehold::server {

class ClusterService final : public etcdserverpb::Cluster::CallbackService {
 public:
  explicit ClusterService(Member* member)
      : member_(member), router_(member, absl::Milliseconds(member->config().request_timeout_ms)) {}
  grpc::ServerUnaryReactor* MemberList(grpc::CallbackServerContext* context,
                                       const etcdserverpb::MemberListRequest* request,
                                       etcdserverpb::MemberListResponse* response) override;
  grpc::ServerUnaryReactor* MemberAdd(grpc::CallbackServerContext* context,
                                      const etcdserverpb::MemberAddRequest* request,
                                      etcdserverpb::MemberAddResponse* response) override;
  grpc::ServerUnaryReactor* MemberRemove(grpc::CallbackServerContext* context,
                                         const etcdserverpb::MemberRemoveRequest* request,
                                         etcdserverpb::MemberRemoveResponse* response) override;
  grpc::ServerUnaryReactor* MemberUpdate(grpc::CallbackServerContext* context,
                                         const etcdserverpb::MemberUpdateRequest* request,
                                         etcdserverpb::MemberUpdateResponse* response) override;
  grpc::ServerUnaryReactor* MemberPromote(grpc::CallbackServerContext* context,
                                          const etcdserverpb::MemberPromoteRequest* request,
                                          etcdserverpb::MemberPromoteResponse* response) override;

 private:
  // After the caller's permission and `allowed` (etcd's strict reconfiguration check, given the
  // member table: see reconfig_checks.h), proposes `change`; once applied, fills `members` and the
  // header of `response` and finishes.
  template <typename Response>
  grpc::ServerUnaryReactor* Change(grpc::CallbackServerContext* context, raftpb::ConfChange change,
                                   internalpb::MemberRecord record,
                                   absl::Status (*allowed)(const std::vector<internalpb::MemberRecord>&,
                                                           const raftpb::ConfChange&),
                                   Response* response);

  Member* member_;
  LeaderRouter router_;  // promotions' way to the leader
};

}  // namespace leasehold::server
