// The peer port's RaftPeer service: Raft messages from other members go to the node loop; lease
// calls and membership changes forwarded by followers are answered only while this member leads.
#pragma once

#include "leasehold/peer.grpc.pb.h"
#include "server/member/member.h"
#include "server/member/node_loop.h"

namespace leasehold::server {

class PeerService final : public peerpb::RaftPeer::CallbackService {
 public:
  // No pointer is owned.
  PeerService(Member* member, NodeLoop* node) : member_(member), node_(node) {}

  grpc::ServerReadReactor<peerpb::MessageBatch>* Deliver(grpc::CallbackServerContext* context,
                                                         peerpb::DeliverAck* ack) override;
  grpc::ServerReadReactor<peerpb::SnapshotChunk>* SendSnapshot(grpc::CallbackServerContext* context,
                                                               peerpb::DeliverAck* ack) override;
  grpc::ServerUnaryReactor* LeaseRenew(grpc::CallbackServerContext* context,
                                       const etcdserverpb::LeaseKeepAliveRequest* request,
                                       etcdserverpb::LeaseKeepAliveResponse* response) override;
  grpc::ServerUnaryReactor* LeaseRenewMany(grpc::CallbackServerContext* context,
                                           const peerpb::LeaseRenewBatch* request,
                                           peerpb::LeaseRenewResults* response) override;
  grpc::ServerUnaryReactor* LeaseTimeToLive(
      grpc::CallbackServerContext* context, const etcdserverpb::LeaseTimeToLiveRequest* request,
      etcdserverpb::LeaseTimeToLiveResponse* response) override;
  grpc::ServerUnaryReactor* MemberAdd(grpc::CallbackServerContext* context,
                                      const etcdserverpb::MemberAddRequest* request,
                                      etcdserverpb::MemberAddResponse* response) override;
  grpc::ServerUnaryReactor* MemberRemove(grpc::CallbackServerContext* context,
                                         const etcdserverpb::MemberRemoveRequest* request,
                                         etcdserverpb::MemberRemoveResponse* response) override;
  grpc::ServerUnaryReactor* MemberPromote(grpc::CallbackServerContext* context,
                                          const etcdserverpb::MemberPromoteRequest* request,
                                          etcdserverpb::MemberPromoteResponse* response) override;

 private:
  Member* const member_;
  NodeLoop* const node_;
};

}  // namespace leasehold::server
