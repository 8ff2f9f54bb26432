#include "server/api/cluster_service.h"

#include <algorithm>
#include <type_traits>

#include "common/etcd_errors.h"
#include "common/url.h"
#include "server/api/caller.h"
#include "server/api/propose_reactor.h"
#include "server/observability/metrics.h"

namespace leasehold::server {
namespace {

template <typename Response>
void FillMembersHeader(Member* member, Response* response) {
  member->FillHeader(response->mutable_header());
  // etcd leaves the revision out of membership responses' headers.
  response->mutable_header()->set_revision(0);
}

template <typename Response>
void FillMembers(Member* member, Response* response) {
  member->ListMembers(response->mutable_members());
  FillMembersHeader(member, response);
}

// Peer URLs a member may be given: at least one, each a URL with a host and port the peers can
// dial. (etcd 3.4 takes any list in MemberUpdate, even an empty one that leaves the member
// unreachable.)
bool ValidPeerUrls(const google::protobuf::RepeatedPtrField<std::string>& urls) {
  return !urls.empty() && std::all_of(urls.begin(), urls.end(), [](const std::string& url) {
    return GrpcAddressOfUrl(url).ok();
  });
}

// Whether this member has applied a change the leader answered for: always so when this member
// is that leader, which answers only once it has applied the change.
bool AddAppliedHere(const storage::MemberTable& members, const etcdserverpb::MemberAddRequest&,
                    const etcdserverpb::MemberAddResponse& answer) {
  return members.Find(answer.member().id()).has_value();
}
// A removal by the removed set rather than by the id's absence: a member that has not yet applied
// the id's addition does not list it either, but has not applied its removal.
bool RemoveAppliedHere(const storage::MemberTable& members,
                       const etcdserverpb::MemberRemoveRequest& request,
                       const etcdserverpb::MemberRemoveResponse&) {
  return members.WasRemoved(request.id());
}
bool PromoteAppliedHere(const storage::MemberTable& members,
                        const etcdserverpb::MemberPromoteRequest& request,
                        const etcdserverpb::MemberPromoteResponse&) {
  std::optional<internalpb::MemberRecord> promoted = members.Find(request.id());
  return promoted.has_value() && !promoted->is_learner();
}

}  // namespace

grpc::ServerUnaryReactor* ClusterService::MemberList(grpc::CallbackServerContext* context,
                                                     const etcdserverpb::MemberListRequest* request,
                                                     etcdserverpb::MemberListResponse* response) {
  if (port_ == Port::kClient) {
    if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  }
  if (!request->linearizable()) {
    FillMembers(member_, response);
    return FinishNow(context, absl::OkStatus());
  }
  // etcd 3.5's linearizable list: once this member has applied all the cluster committed before.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member_->proposer().ReadBarrier([this, reactor, response](absl::Status st) {
    if (st.ok()) FillMembers(member_, response);
    reactor->Finish(ToGrpcStatus(st));
  });
  return reactor;
}

template <typename Request, typename Response>
grpc::ServerUnaryReactor* ClusterService::RouteToLeader(
    grpc::CallbackServerContext* context, const Request& request, Response* response,
    void (LeaderRouter::*route)(const Request&, std::function<bool()>,
                                Member::ChangeDone<Response>),
    bool (*applied_here)(const storage::MemberTable&, const Request&, const Response&)) {
  // Membership changes are the root role's, while auth is enabled.
  if (absl::Status st = CheckCallerIsAdmin(*member_, *context); !st.ok())
    return FinishNow(context, st);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  (router_.*route)(
      request, [context] { return !context->IsCancelled(); },
      [this, reactor, response, request, applied_here](absl::StatusOr<Response> answer) {
        if (!answer.ok()) return reactor->Finish(ToGrpcStatus(answer.status()));
        if constexpr (std::is_same_v<Response, etcdserverpb::MemberPromoteResponse>)
          Metrics::Get().CountLearnerPromoted();
        *response = std::move(*answer);
        // The leader has applied the change. Once this member has too, a member list asked of it
        // next shows it, as with etcd, where the member asked waits for its own apply. A member
        // that has applied it answers at once: a read barrier could not complete while the change
        // leaves no quorum running (a second voter added to one, not yet started). Otherwise this
        // member waits for its apply; should that fail (it is cut off, or removed), the leader's
        // list stands.
        auto finish = [this, reactor, response](bool own_list) {
          if (own_list) {
            response->clear_members();
            member_->ListMembers(response->mutable_members());
          }
          FillMembersHeader(member_, response);
          reactor->Finish(grpc::Status::OK);
        };
        if (applied_here(member_->state_machine().members(), request, *response))
          return finish(true);
        member_->proposer().ReadBarrier([finish](absl::Status applied) { finish(applied.ok()); });
      });
  return reactor;
}

grpc::ServerUnaryReactor* ClusterService::MemberAdd(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::MemberAddRequest* request,
                                                    etcdserverpb::MemberAddResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  if (!ValidPeerUrls(request->peerurls())) return FinishNow(context, errors::MemberBadUrls());
  return RouteToLeader(context, *request, response, &LeaderRouter::AddMember, AddAppliedHere);
}

grpc::ServerUnaryReactor* ClusterService::MemberRemove(
    grpc::CallbackServerContext* context, const etcdserverpb::MemberRemoveRequest* request,
    etcdserverpb::MemberRemoveResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return RouteToLeader(context, *request, response, &LeaderRouter::RemoveMember, RemoveAppliedHere);
}

grpc::ServerUnaryReactor* ClusterService::MemberUpdate(
    grpc::CallbackServerContext* context, const etcdserverpb::MemberUpdateRequest* request,
    etcdserverpb::MemberUpdateResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  // Permission first, as etcd: a caller without the root role learns nothing about members.
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  if (absl::Status st = member_->state_machine().auth().CheckAdmin(*user); !st.ok())
    return FinishNow(context, st);
  if (!member_->state_machine().members().Find(request->id()))
    return FinishNow(context, errors::MemberNotFound());
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

grpc::ServerUnaryReactor* ClusterService::MemberPromote(
    grpc::CallbackServerContext* context, const etcdserverpb::MemberPromoteRequest* request,
    etcdserverpb::MemberPromoteResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return RouteToLeader(context, *request, response, &LeaderRouter::PromoteLearner,
                       PromoteAppliedHere);
}

}  // namespace leasehold::server
