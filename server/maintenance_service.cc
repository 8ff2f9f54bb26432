#include "server/maintenance_service.h"

#include "server/propose_reactor.h"

namespace leasehold::server {

grpc::ServerUnaryReactor* MaintenanceService::Status(grpc::CallbackServerContext* context,
                                                     const etcdserverpb::StatusRequest* request,
                                                     etcdserverpb::StatusResponse* response) {
  const int64_t size = member_->engine().ApproximateSize();
  response->set_version(member_->config().version);
  response->set_dbsize(size);
  response->set_dbsizeinuse(size);
  response->set_leader(member_->config().member_id);
  response->set_raftindex(member_->proposer().committed_index());
  response->set_raftappliedindex(member_->proposer().applied_index());
  response->set_raftterm(member_->proposer().term());
  member_->FillHeader(response->mutable_header());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* MaintenanceService::Alarm(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::AlarmRequest* request,
                                                    etcdserverpb::AlarmResponse* response) {
  if (request->action() != etcdserverpb::AlarmRequest::GET) {
    return FinishNow(context, absl::InvalidArgumentError("etcdserver: alarms cannot be changed on this server"));
  }
  member_->FillHeader(response->mutable_header());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ClusterService::MemberList(grpc::CallbackServerContext* context,
                                                     const etcdserverpb::MemberListRequest* request,
                                                     etcdserverpb::MemberListResponse* response) {
  const MemberConfig& config = member_->config();
  etcdserverpb::Member* self = response->add_members();
  self->set_id(config.member_id);
  self->set_name(config.name);
  for (const auto& url : config.peer_urls) self->add_peerurls(url);
  for (const auto& url : config.client_urls) self->add_clienturls(url);
  member_->FillHeader(response->mutable_header());
  // etcd leaves the revision out of a member list header.
  response->mutable_header()->set_revision(0);
  return FinishNow(context, absl::OkStatus());
}

}  // namespace leasehold::server
