#include "server/api/peer_service.h"

#include <atomic>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/api/propose_reactor.h"
#include "server/observability/metrics.h"
#include "server/peer/peer_transport.h"

namespace leasehold::server {
namespace {

// Reads batches until the sender closes the stream, handing each to the node loop.
class DeliverReactor final : public grpc::ServerReadReactor<peerpb::MessageBatch> {
 public:
  DeliverReactor(uint64_t cluster_id, const storage::MemberTable* members, NodeLoop* node)
      : cluster_id_(cluster_id), members_(members), node_(node) {
    StartRead(&batch_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    if (batch_.cluster_id() != cluster_id_) {
      Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "leasehold: message from a member of another cluster"));
      return;
    }
    if (members_->WasRemoved(batch_.from())) {
      Finish(
          grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, std::string(kRemovedMemberRefusal)));
      return;
    }
    Metrics::Get().CountPeerReceivedBytes(absl::StrCat(absl::Hex(batch_.from())),
                                          batch_.ByteSizeLong());
    std::vector<raftpb::Message> messages(
        std::make_move_iterator(batch_.mutable_messages()->begin()),
        std::make_move_iterator(batch_.mutable_messages()->end()));
    batch_.Clear();
    node_->Receive(std::move(messages));
    StartRead(&batch_);
  }
  void OnDone() override { delete this; }

 private:
  const uint64_t cluster_id_;
  const storage::MemberTable* const members_;
  NodeLoop* const node_;
  peerpb::MessageBatch batch_;
};

// Reassembles one snapshot message from its chunks and hands it to the node loop whole.
class SnapshotReactor final : public grpc::ServerReadReactor<peerpb::SnapshotChunk> {
 public:
  SnapshotReactor(uint64_t cluster_id, NodeLoop* node) : cluster_id_(cluster_id), node_(node) {
    StartRead(&chunk_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      if (!has_message_) {
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "leasehold: snapshot without its message"));
        return;
      }
      *message_.mutable_snapshot()->mutable_data() = std::move(data_);
      node_->Receive({std::move(message_)});
      Finish(grpc::Status::OK);
      return;
    }
    if (chunk_.has_message()) {
      if (has_message_ || chunk_.cluster_id() != cluster_id_ ||
          chunk_.message().type() != raftpb::MSG_SNAPSHOT) {
        Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "leasehold: unexpected snapshot chunk"));
        return;
      }
      message_ = std::move(*chunk_.mutable_message());
      has_message_ = true;
    }
    data_.append(chunk_.data());
    chunk_.Clear();
    StartRead(&chunk_);
  }
  void OnDone() override { delete this; }

 private:
  const uint64_t cluster_id_;
  NodeLoop* const node_;
  peerpb::SnapshotChunk chunk_;
  raftpb::Message message_;
  bool has_message_ = false;
  std::string data_;
};

// A membership change a follower forwarded: decided here, if this member leads.
template <typename Request, typename Response>
grpc::ServerUnaryReactor* DecideChange(grpc::CallbackServerContext* context, const Request& request,
                                       Response* response, Member* member,
                                       void (Member::*decide)(const Request&,
                                                              Member::ChangeDone<Response>)) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  (member->*decide)(request, [reactor, response](absl::StatusOr<Response> answer) {
    if (answer.ok()) *response = std::move(*answer);
    reactor->Finish(ToGrpcStatus(answer.status()));
  });
  return reactor;
}

}  // namespace

grpc::ServerReadReactor<peerpb::SnapshotChunk>* PeerService::SendSnapshot(
    grpc::CallbackServerContext* context, peerpb::DeliverAck* ack) {
  return new SnapshotReactor(member_->config().cluster_id, node_);
}

grpc::ServerReadReactor<peerpb::MessageBatch>* PeerService::Deliver(
    grpc::CallbackServerContext* context, peerpb::DeliverAck* ack) {
  return new DeliverReactor(member_->config().cluster_id, &member_->state_machine().members(),
                            node_);
}

grpc::ServerUnaryReactor* PeerService::LeaseRenew(
    grpc::CallbackServerContext* context, const etcdserverpb::LeaseKeepAliveRequest* request,
    etcdserverpb::LeaseKeepAliveResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member_->RenewLease(
      *request, [reactor, response](absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> answer) {
        if (answer.ok()) *response = std::move(*answer);
        reactor->Finish(ToGrpcStatus(answer.status()));
      });
  return reactor;
}

grpc::ServerUnaryReactor* PeerService::LeaseRenewMany(grpc::CallbackServerContext* context,
                                                      const peerpb::LeaseRenewBatch* request,
                                                      peerpb::LeaseRenewResults* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const int count = request->requests_size();
  if (count == 0) {
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  // Every outcome exists before any renewal starts: the answers, which may come on other threads,
  // each fill their own element and never resize the list.
  for (int i = 0; i < count; ++i) response->add_outcomes();
  auto remaining = std::make_shared<std::atomic<int>>(count);
  for (int i = 0; i < count; ++i) {
    member_->RenewLease(request->requests(i),
                        [reactor, response, remaining,
                         i](absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> answer) {
                          peerpb::LeaseRenewOutcome* outcome = response->mutable_outcomes(i);
                          if (answer.ok()) {
                            *outcome->mutable_response() = std::move(*answer);
                          } else {
                            outcome->set_code(static_cast<int32_t>(answer.status().code()));
                            outcome->set_message(std::string(answer.status().message()));
                          }
                          if (remaining->fetch_sub(1, std::memory_order_acq_rel) == 1)
                            reactor->Finish(grpc::Status::OK);
                        });
  }
  return reactor;
}

grpc::ServerUnaryReactor* PeerService::LeaseTimeToLive(
    grpc::CallbackServerContext* context, const etcdserverpb::LeaseTimeToLiveRequest* request,
    etcdserverpb::LeaseTimeToLiveResponse* response) {
  auto answer = member_->LeaseTimeToLive(*request);
  if (answer.ok()) *response = std::move(*answer);
  return FinishNow(context, answer.status());
}

grpc::ServerUnaryReactor* PeerService::MemberAdd(grpc::CallbackServerContext* context,
                                                 const etcdserverpb::MemberAddRequest* request,
                                                 etcdserverpb::MemberAddResponse* response) {
  return DecideChange(context, *request, response, member_, &Member::AddMember);
}

grpc::ServerUnaryReactor* PeerService::MemberRemove(
    grpc::CallbackServerContext* context, const etcdserverpb::MemberRemoveRequest* request,
    etcdserverpb::MemberRemoveResponse* response) {
  return DecideChange(context, *request, response, member_, &Member::RemoveMember);
}

grpc::ServerUnaryReactor* PeerService::MemberPromote(
    grpc::CallbackServerContext* context, const etcdserverpb::MemberPromoteRequest* request,
    etcdserverpb::MemberPromoteResponse* response) {
  return DecideChange(context, *request, response, member_, &Member::PromoteLearner);
}

}  // namespace leasehold::server
