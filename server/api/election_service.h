// v3electionpb.Election: etcd's election service, for clients that speak gRPC but have no election
// recipe of their own. It runs the client library's Election against this member (through an
// in-process channel), so it interoperates with `etcdctl elect` and leasehold::Election. Campaign
// uses the caller's lease as it is, as etcd does; lease 0 gets a fresh 60 s lease.
// Errors are etcd 3.4's: "election: not leader", "election: no leader" and a missing leader key,
// with gRPC code UNKNOWN as etcd 3.4 sends them.
#pragma once

#include "server/api/blocking_calls.h"
#include "server/member/member.h"
#include "v3electionpb/v3election.grpc.pb.h"

namespace leasehold::server {

class ElectionService final : public v3electionpb::Election::CallbackService {
 public:
  ElectionService(Member* member, BlockingCalls* calls) : member_(member), calls_(calls) {}

  grpc::ServerUnaryReactor* Campaign(grpc::CallbackServerContext* context,
                                     const v3electionpb::CampaignRequest* request,
                                     v3electionpb::CampaignResponse* response) override;
  grpc::ServerUnaryReactor* Proclaim(grpc::CallbackServerContext* context,
                                     const v3electionpb::ProclaimRequest* request,
                                     v3electionpb::ProclaimResponse* response) override;
  grpc::ServerUnaryReactor* Leader(grpc::CallbackServerContext* context,
                                   const v3electionpb::LeaderRequest* request,
                                   v3electionpb::LeaderResponse* response) override;
  grpc::ServerWriteReactor<v3electionpb::LeaderResponse>* Observe(
      grpc::CallbackServerContext* context, const v3electionpb::LeaderRequest* request) override;
  grpc::ServerUnaryReactor* Resign(grpc::CallbackServerContext* context,
                                   const v3electionpb::ResignRequest* request,
                                   v3electionpb::ResignResponse* response) override;

 private:
  void FillHeader(const etcdserverpb::ResponseHeader& from, etcdserverpb::ResponseHeader* to) const;

  Member* const member_;
  BlockingCalls* const calls_;
};

}  // namespace leasehold::server
