// etcdserverpb.Cluster: the member list from the replicated member table, and membership changes
// (add, remove, promote) proposed one at a time through the log, each decided by the leader, to
// which a follower forwards it. MemberUpdate (new peer URLs for a member) is an ordinary
// entry: it does not change Raft's configuration. Also served on the peer port, where a member
// joining with --initial-cluster-state existing looks up its id: there a learner answers MemberList
// too (as etcd's learner answers the peer port's member lookup), while on the client port it
// refuses every call (Member::LearnerRefusal).
#pragma once

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/member/leader_router.h"
#include "server/member/member.h"

namespace leasehold::server {

class ClusterService final : public etcdserverpb::Cluster::CallbackService {
 public:
  enum class Port { kClient, kPeer };
  explicit ClusterService(Member* member, Port port = Port::kClient)
      : member_(member),
        port_(port),
        router_(member, absl::Milliseconds(member->config().request_timeout_ms)) {}
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
  // After the caller's permission, takes a membership change to the leader, which decides it
  // (Member::AddMember and the like); answers with this member's list once `applied_here` says
  // this member has applied the change too (or once it has caught up with the leader).
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* RouteToLeader(
      grpc::CallbackServerContext* context, const Request& request, Response* response,
      void (LeaderRouter::*route)(const Request&, std::function<bool()>,
                                  Member::ChangeDone<Response>),
      bool (*applied_here)(const storage::MemberTable&, const Request&, const Response&));

  Member* member_;
  const Port port_;
  LeaderRouter router_;  // membership changes' way to the leader
};

}  // namespace leasehold::server
