#include "server/api/election_service.h"

#include "client/leasehold/client.h"
#include "client/leasehold/election.h"
#include "server/api/grpc_status.h"
#include "server/api/propose_reactor.h"
#include "server/api/session_lease.h"

namespace leasehold::server {
namespace {

grpc::Status ElectionError(const absl::Status& status) {
  // Not (or no longer) the leader; or, campaigning, the caller's lease ended while it waited, so
  // its key is gone (etcd 3.4 answered success there, as with Lock; the fix for it reports this).
  if (absl::IsFailedPrecondition(status))
    return grpc::Status(grpc::StatusCode::UNKNOWN, "election: not leader");
  return EmbeddedClientError(status);
}

const grpc::Status kMissingLeaderKey(grpc::StatusCode::UNKNOWN,
                                     "\"leader\" field must be provided");

LeaderKey FromProto(const v3electionpb::LeaderKey& key) {
  return LeaderKey{key.name(), key.key(), key.rev(), key.lease()};
}

}  // namespace

void ElectionService::FillHeader(const etcdserverpb::ResponseHeader& from,
                                 etcdserverpb::ResponseHeader* to) const {
  to->set_revision(from.revision());
  member_->FillHeader(to);
}

grpc::ServerUnaryReactor* ElectionService::Campaign(grpc::CallbackServerContext* context,
                                                    const v3electionpb::CampaignRequest* request,
                                                    v3electionpb::CampaignResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return calls_->Unary(
      context, [this, request, response](Client& client, const CancellationToken& cancel) {
        auto lease = SessionLease(&client, request->lease());
        if (!lease.ok()) return EmbeddedClientError(lease.status());
        Election election(&client, request->name());
        auto leader = election.Campaign(*lease, request->value(), absl::InfiniteDuration(), cancel);
        if (!leader.ok()) return ElectionError(leader.status());
        // etcd answers with the header of the campaign's own queueing transaction, however long the
        // campaign then waited.
        response->mutable_header()->set_revision(election.campaign_revision());
        member_->FillHeader(response->mutable_header());
        auto* key = response->mutable_leader();
        key->set_name(leader->name);
        key->set_key(leader->key);
        key->set_rev(leader->rev);
        key->set_lease(leader->lease);
        return grpc::Status::OK;
      });
}

grpc::ServerUnaryReactor* ElectionService::Proclaim(grpc::CallbackServerContext* context,
                                                    const v3electionpb::ProclaimRequest* request,
                                                    v3electionpb::ProclaimResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return calls_->Unary(context,
                       [this, request, response](Client& client, const CancellationToken&) {
                         if (!request->has_leader()) return kMissingLeaderKey;
                         // As etcd's server resumes the election on a session of the given lease,
                         // lease 0 means a new 60 s one, which the proclaimed value then lives on.
                         auto lease = SessionLease(&client, request->leader().lease());
                         if (!lease.ok()) return EmbeddedClientError(lease.status());
                         LeaderKey leader = FromProto(request->leader());
                         leader.lease = *lease;
                         Election election(&client, request->leader().name());
                         auto header = election.Proclaim(leader, request->value());
                         if (!header.ok()) return ElectionError(header.status());
                         FillHeader(*header, response->mutable_header());
                         return grpc::Status::OK;
                       });
}

grpc::ServerUnaryReactor* ElectionService::Leader(grpc::CallbackServerContext* context,
                                                  const v3electionpb::LeaderRequest* request,
                                                  v3electionpb::LeaderResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return calls_->Unary(context,
                       [this, request, response](Client& client, const CancellationToken&) {
                         Election election(&client, request->name());
                         auto leader = election.Leader();
                         if (!leader.ok()) return ElectionError(leader.status());
                         FillHeader(leader->header(), response->mutable_header());
                         *response->mutable_kv() = leader->kvs(0);
                         return grpc::Status::OK;
                       });
}

grpc::ServerWriteReactor<v3electionpb::LeaderResponse>* ElectionService::Observe(
    grpc::CallbackServerContext* context, const v3electionpb::LeaderRequest* request) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) {
    return new RefusedWriteReactor<v3electionpb::LeaderResponse>(ToGrpcStatus(st));
  }
  return calls_->Stream<v3electionpb::LeaderResponse>(
      context, [this, name = request->name()](
                   Client& client, const CancellationToken& cancel,
                   const std::function<bool(const v3electionpb::LeaderResponse&)>& write) {
        Election election(&client, name);
        absl::Status st = election.Observe(
            [&](const etcdserverpb::ResponseHeader& header, const mvccpb::KeyValue& kv) {
              v3electionpb::LeaderResponse response;
              FillHeader(header, response.mutable_header());
              *response.mutable_kv() = kv;
              write(response);
            },
            cancel);
        return ElectionError(st);
      });
}

grpc::ServerUnaryReactor* ElectionService::Resign(grpc::CallbackServerContext* context,
                                                  const v3electionpb::ResignRequest* request,
                                                  v3electionpb::ResignResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return calls_->Unary(context,
                       [this, request, response](Client& client, const CancellationToken&) {
                         if (!request->has_leader()) return kMissingLeaderKey;
                         // etcd resumes the election on a session here too, so lease 0 grants a 60
                         // s lease, unused.
                         auto lease = SessionLease(&client, request->leader().lease());
                         if (!lease.ok()) return EmbeddedClientError(lease.status());
                         Election election(&client, request->leader().name());
                         auto header = election.Resign(FromProto(request->leader()));
                         if (!header.ok()) return ElectionError(header.status());
                         FillHeader(*header, response->mutable_header());
                         return grpc::Status::OK;
                       });
}

}  // namespace leasehold::server
