#include "server/cluster_service.h"

#include <algorithm>

#include "server/caller.h"
#include "server/flags.h"
#include "server/propose_reactor.h"
#include "server/reconfig_checks.h"
#include "storage/etcd_errors.h"

namespace leasehold::server {
namespace {

template <typename Response>
void FillMembers(Member* member, Response* response) {
  member->ListMembers(response->mutable_members());
  member->FillHeader(response->mutable_header());
  // etcd leaves the revision out of membership responses' headers.
  response->mutable_header()->set_revision(0);
}

// Peer URLs a member may be given: at least one, each a URL with a host and port the peers can dial.
// (etcd 3.4 takes any list in MemberUpdate, even an empty one that leaves the member unreachable.)
bool ValidPeerUrls(const google::protobuf::RepeatedPtrField<std::string>& urls) {
  return !urls.empty() && std::all_of(urls.begin(), urls.end(), [](const std::string& url) { return HostPortOfUrl(url).ok(); });
}

}  // namespace

grpc::ServerUnaryReactor* ClusterService::MemberList(grpc::CallbackServerContext* context,
                                                     const etcdserverpb::MemberListRequest* request,
                                                     etcdserverpb::MemberListResponse* response) {
  FillMembers(member_, response);
  return FinishNow(context, absl::OkStatus());
}

template <typename Response>
grpc::ServerUnaryReactor* ClusterService::Change(grpc::CallbackServerContext* context, raftpb::ConfChange change,
                                                 internalpb::MemberRecord record,
                                                 absl::Status (*allowed)(const std::vector<internalpb::MemberRecord>&,
                                                                         const raftpb::ConfChange&),
                                                 Response* response) {
  // Membership changes are the root role's, while auth is enabled.
  if (absl::Status st = CheckCallerIsAdmin(*member_, *context); !st.ok()) return FinishNow(context, st);
  if (absl::Status st = allowed(member_->state_machine().members().List(), change); !st.ok()) {
    return FinishNow(context, st);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member_->ProposeConfChange(std::move(change), std::move(record), [this, reactor, response](absl::Status status) {
    if (status.ok()) FillMembers(member_, response);
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerUnaryReactor* ClusterService::MemberAdd(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::MemberAddRequest* request,
                                                    etcdserverpb::MemberAddResponse* response) {
  if (!ValidPeerUrls(request->peerurls())) return FinishNow(context, errors::MemberBadUrls());
  internalpb::MemberRecord record;
  *record.mutable_peer_urls() = request->peerurls();
  for (const auto& existing : member_->state_machine().members().List()) {
    for (const auto& url : existing.peer_urls()) {
      if (std::find(request->peerurls().begin(), request->peerurls().end(), url) != request->peerurls().end()) {
        return FinishNow(context, errors::PeerUrlExists());
      }
    }
  }
  record.set_is_learner(request->islearner());
  raftpb::ConfChange change;
  change.set_type(request->islearner() ? raftpb::CONF_ADD_LEARNER : raftpb::CONF_ADD_VOTER);
  // A fresh id, distinct from every earlier member's even for reused URLs; the new member learns it
  // from the cluster when it joins.
  change.set_node_id(static_cast<uint64_t>(member_->NextId()) | (1ULL << 63));
  etcdserverpb::Member* added = response->mutable_member();
  added->set_id(change.node_id());
  *added->mutable_peerurls() = request->peerurls();
  added->set_islearner(request->islearner());
  return Change(
      context, std::move(change), std::move(record),
      [](const MemberRecords& members, const raftpb::ConfChange& c) {
        return MayAddMember(members, c.type() == raftpb::CONF_ADD_LEARNER);
      },
      response);
}

grpc::ServerUnaryReactor* ClusterService::MemberRemove(grpc::CallbackServerContext* context,
                                                       const etcdserverpb::MemberRemoveRequest* request,
                                                       etcdserverpb::MemberRemoveResponse* response) {
  if (!member_->state_machine().members().Find(request->id())) return FinishNow(context, errors::MemberNotFound());
  raftpb::ConfChange change;
  change.set_type(raftpb::CONF_REMOVE_NODE);
  change.set_node_id(request->id());
  return Change(
      context, std::move(change), internalpb::MemberRecord(),
      [](const MemberRecords& members, const raftpb::ConfChange& c) { return MayRemoveMember(members, c.node_id()); },
      response);
}

grpc::ServerUnaryReactor* ClusterService::MemberUpdate(grpc::CallbackServerContext* context,
                                                       const etcdserverpb::MemberUpdateRequest* request,
                                                       etcdserverpb::MemberUpdateResponse* response) {
  // Permission first, as etcd: a caller without the root role learns nothing about members.
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  if (absl::Status st = member_->state_machine().auth().CheckAdmin(*user); !st.ok()) return FinishNow(context, st);
  if (!member_->state_machine().members().Find(request->id())) return FinishNow(context, errors::MemberNotFound());
  if (!ValidPeerUrls(request->peerurls())) return FinishNow(context, errors::MemberBadUrls());
  internalpb::InternalRequest entry;
  // The caller travels with the entry, so the root role is checked again in log order.
  entry.mutable_caller()->set_user(std::move(*user));
  internalpb::MemberRecord* update = entry.mutable_member_update();
  update->set_id(request->id());
  *update->mutable_peer_urls() = request->peerurls();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member_->Submit(std::move(entry), [this, reactor, response](storage::ApplyResult result) {
    if (result.status.ok()) FillMembers(member_, response);
    reactor->Finish(ToGrpcStatus(result.status));
  });
  return reactor;
}

grpc::ServerUnaryReactor* ClusterService::MemberPromote(grpc::CallbackServerContext* context,
                                                        const etcdserverpb::MemberPromoteRequest* request,
                                                        etcdserverpb::MemberPromoteResponse* response) {
  if (absl::Status st = CheckCallerIsAdmin(*member_, *context); !st.ok()) return FinishNow(context, st);
  // Decided by the leader, as in etcd: only it knows whether the learner has caught up.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  router_.PromoteLearner(
      *request, [context] { return !context->IsCancelled(); },
      [this, reactor, response](absl::StatusOr<etcdserverpb::MemberPromoteResponse> answer) {
        if (answer.ok()) {
          *response = std::move(*answer);
          member_->FillHeader(response->mutable_header());
          response->mutable_header()->set_revision(0);
        }
        reactor->Finish(ToGrpcStatus(answer.status()));
      });
  return reactor;
}

}  // namespace leasehold::server
