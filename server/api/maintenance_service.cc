#include "server/api/maintenance_service.h"

#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/etcd_errors.h"
#include "server/api/grpc_status.h"
#include "server/api/propose_reactor.h"
#include "server/observability/log.h"
#include "server/observability/metrics.h"
#include "storage/backup/backup.h"

namespace leasehold::server {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Writes a backup, one piece per message, each sent once the previous one has gone.
class SnapshotStream final : public grpc::ServerWriteReactor<etcdserverpb::SnapshotResponse> {
 public:
  SnapshotStream(Member* member) : member_(member), backup_(member->engine()) { WriteNext(); }

  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED, "snapshot stream cancelled"));
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  static constexpr size_t kChunkBytes = 64 * 1024;

  void WriteNext() {
    response_.Clear();
    auto more = backup_.Next(kChunkBytes, response_.mutable_blob());
    if (!more.ok()) return Finish(ToGrpcStatus(more.status()));
    if (!*more) {
      Metrics::Get().ObserveBackendSnapshot(SecondsSince(started_));
      return Finish(grpc::Status::OK);
    }
    response_.set_remaining_bytes(backup_.total_bytes() - backup_.written_bytes());
    response_.set_version(member_->config().version);  // etcd 3.6: the server that made it
    member_->FillHeader(response_.mutable_header());
    StartWrite(&response_);
  }

  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  Member* const member_;
  storage::BackupWriter backup_;
  etcdserverpb::SnapshotResponse response_;
};

}  // namespace

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
  // etcdctl's "IS LEARNER" column: this member as the member table has it.
  response->set_islearner(
      member_->state_machine().members().IsLearner(member_->config().member_id));
  // etcd 3.6's columns: the schema the data answers as (the API version served), the quota, and
  // no downgrade (Downgrade enables none).
  const std::string& version = member_->config().version;
  response->set_storageversion(version.substr(0, version.rfind('.')) + ".0");
  response->set_dbsizequota(member_->config().quota_backend_bytes);
  response->mutable_downgradeinfo();
  // etcd lists a missing leader and every raised alarm (in protobuf's text form) as errors.
  if (response->leader() == 0) response->add_errors(std::string(errors::NoLeader().message()));
  for (const auto& alarm : member_->state_machine().alarms().List(etcdserverpb::NONE)) {
    response->add_errors(absl::StrCat("memberID:", alarm.memberid(),
                                      " alarm:", etcdserverpb::AlarmType_Name(alarm.alarm()), " "));
  }
  member_->FillHeader(response->mutable_header());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* MaintenanceService::Alarm(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::AlarmRequest* request,
                                                    etcdserverpb::AlarmResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  // etcd's Alarm answers carry no header (`etcdctl alarm list -w json` prints {} with no alarm).
  if (request->action() == etcdserverpb::AlarmRequest::GET) {
    for (auto& alarm : member_->state_machine().alarms().List(request->alarm()))
      *response->add_alarms() = alarm;
    return FinishNow(context, absl::OkStatus());
  }
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  internalpb::InternalRequest entry;
  *entry.mutable_alarm() = *request;
  entry.mutable_caller()->set_user(std::move(*user));
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member_->Submit(std::move(entry), [reactor, response](storage::ApplyResult result) {
    if (result.status.ok()) {
      response->Swap(result.response.mutable_alarm());
      response->clear_header();
    }
    reactor->Finish(ToGrpcStatus(result.status));
  });
  return reactor;
}

grpc::ServerUnaryReactor* MaintenanceService::Defragment(
    grpc::CallbackServerContext* context, const etcdserverpb::DefragmentRequest* request,
    etcdserverpb::DefragmentResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  if (absl::Status st = CheckMaintenanceCaller(*member_, *context); !st.ok())
    return FinishNow(context, st);
  // Like etcd's, a defragmentation holds up its caller until done (here one gRPC worker thread, not
  // the member).
  const auto start = std::chrono::steady_clock::now();
  Metrics::Get().SetDefragInflight(true);
  absl::Status st = member_->engine().CompactAll();
  Metrics::Get().SetDefragInflight(false);
  Metrics::Get().ObserveDefrag(SecondsSince(start));
  return FinishNow(context, st);  // headerless, as etcd's
}

grpc::ServerUnaryReactor* MaintenanceService::Hash(grpc::CallbackServerContext* context,
                                                   const etcdserverpb::HashRequest* request,
                                                   etcdserverpb::HashResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  if (absl::Status st = CheckMaintenanceCaller(*member_, *context); !st.ok())
    return FinishNow(context, st);
  const auto start = std::chrono::steady_clock::now();
  auto hashed = member_->state_machine().HashAll();
  if (!hashed.ok()) return FinishNow(context, hashed.status());
  Metrics::Get().ObserveHash(SecondsSince(start));
  response->set_hash(*hashed);
  member_->FillHeader(response->mutable_header());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* MaintenanceService::HashKV(grpc::CallbackServerContext* context,
                                                     const etcdserverpb::HashKVRequest* request,
                                                     etcdserverpb::HashKVResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  if (absl::Status st = CheckMaintenanceCaller(*member_, *context); !st.ok())
    return FinishNow(context, st);
  return FinishNow(context, AnswerHashKv(*member_, *request, response));
}

absl::Status AnswerHashKv(Member& member, const etcdserverpb::HashKVRequest& request,
                          etcdserverpb::HashKVResponse* response) {
  const auto start = std::chrono::steady_clock::now();
  auto hashed = member.state_machine().HashKv(request.revision());
  if (!hashed.ok()) return hashed.status();
  Metrics::Get().ObserveHashKv(SecondsSince(start));
  response->set_hash(hashed->hash);
  response->set_compact_revision(hashed->compact_revision);
  response->set_hash_revision(hashed->revision);
  member.FillHeader(response->mutable_header());
  return absl::OkStatus();
}

grpc::ServerWriteReactor<etcdserverpb::SnapshotResponse>* MaintenanceService::Snapshot(
    grpc::CallbackServerContext* context, const etcdserverpb::SnapshotRequest* request) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) {
    return new RefusedWriteReactor<etcdserverpb::SnapshotResponse>(ToGrpcStatus(st));
  }
  if (absl::Status st = CheckMaintenanceCaller(*member_, *context); !st.ok()) {
    return new RefusedWriteReactor<etcdserverpb::SnapshotResponse>(ToGrpcStatus(st));
  }
  LogInfo("sending a snapshot", {{"peer", context->peer()}});
  return new SnapshotStream(member_);
}

grpc::ServerUnaryReactor* MaintenanceService::Downgrade(
    grpc::CallbackServerContext* context, const etcdserverpb::DowngradeRequest* request,
    etcdserverpb::DowngradeResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  if (absl::Status st = CheckMaintenanceCaller(*member_, *context); !st.ok())
    return FinishNow(context, st);
  switch (request->action()) {
    case etcdserverpb::DowngradeRequest::VALIDATE:
    case etcdserverpb::DowngradeRequest::ENABLE: {
      // A target is major.minor, optionally with a patch number (as etcd reads it).
      int major = 0, minor = 0, patch = 0;
      char rest = 0;
      const int fields =
          std::sscanf(request->version().c_str(), "%d.%d.%d%c", &major, &minor, &patch, &rest);
      if (fields < 2 || fields > 3 || major < 0 || minor < 0 || patch < 0)
        return FinishNow(context, errors::WrongDowngradeVersionFormat());
      // etcd's rule would allow one minor below the cluster version; Leasehold has no such
      // version to run as, so every target is refused.
      return FinishNow(context, errors::InvalidDowngradeTargetVersion());
    }
    case etcdserverpb::DowngradeRequest::CANCEL:
      return FinishNow(context, errors::NoInflightDowngrade());
    default:
      return FinishNow(context, errors::UnknownMethod());
  }
}

grpc::ServerUnaryReactor* MaintenanceService::MoveLeader(
    grpc::CallbackServerContext* context, const etcdserverpb::MoveLeaderRequest* request,
    etcdserverpb::MoveLeaderResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  if (absl::Status st = CheckMaintenanceCaller(*member_, *context); !st.ok())
    return FinishNow(context, st);
  if (!member_->IsLeader()) return FinishNow(context, errors::NotLeader());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member_->proposer().TransferLeadership(request->targetid(),
                                         [this, reactor, response](absl::Status st) {
                                           member_->FillHeader(response->mutable_header());
                                           reactor->Finish(ToGrpcStatus(st));
                                         });
  return reactor;
}

}  // namespace leasehold::server
