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
  response->set_leader(member_->proposer().leader_id());
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

}  // namespace leasehold::server
