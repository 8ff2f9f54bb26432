#include "server/corruption/initial_corrupt_check.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/api/grpc_status.h"
#include "server/api/maintenance_service.h"
#include "server/api/propose_reactor.h"
#include "server/observability/log.h"
#include "server/peer/peer_dialer.h"

namespace leasehold::server {
namespace {

std::string HexId(uint64_t id) { return absl::StrCat(absl::Hex(id)); }

}  // namespace

PeerHash AskPeerHash(const internalpb::MemberRecord& peer, int64_t revision,
                     const TlsFiles& peer_tls, absl::Duration timeout) {
  PeerHash answer;
  answer.member_id = peer.id();
  answer.error = absl::UnavailableError("the member has no peer URL");
  for (const std::string& url : peer.peer_urls()) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = DialPeer(url, peer_tls);
    if (!channel.ok()) {
      answer.error = channel.status();
      continue;
    }
    auto peer_maintenance = etcdserverpb::Maintenance::NewStub(*channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
    etcdserverpb::HashKVRequest request;
    request.set_revision(revision);
    etcdserverpb::HashKVResponse response;
    grpc::Status status = peer_maintenance->HashKV(&context, request, &response);
    if (status.ok()) {
      answer.response = std::move(response);
      answer.error = absl::OkStatus();
      return answer;
    }
    answer.error =
        absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  return answer;
}

grpc::ServerUnaryReactor* PeerHashKvService::HashKV(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::HashKVRequest* request,
                                                    etcdserverpb::HashKVResponse* response) {
  return FinishNow(context, AnswerHashKv(*member_, *request, response));
}

absl::Status JudgePeerHashes(uint64_t self_id, uint32_t local_hash, int64_t local_compact_revision,
                             const std::vector<PeerHash>& peers) {
  int mismatches = 0;
  for (const PeerHash& peer : peers) {
    const LogFields ids = {{"local-member-id", HexId(self_id)},
                           {"remote-peer-id", HexId(peer.member_id)}};
    if (!peer.response) {
      LogFields fields = ids;
      fields.emplace_back("error", peer.error.ToString());
      LogWarn("cannot fetch hash from remote peer", fields);
      continue;
    }
    if (peer.response->hash() == local_hash) continue;
    LogFields fields = ids;
    fields.emplace_back("local-member-hash", std::to_string(local_hash));
    fields.emplace_back("remote-peer-hash", std::to_string(peer.response->hash()));
    fields.emplace_back("local-member-compact-revision", std::to_string(local_compact_revision));
    fields.emplace_back("remote-peer-compact-revision",
                        std::to_string(peer.response->compact_revision()));
    if (peer.response->compact_revision() == local_compact_revision) {
      LogWarn("found different hash values from remote peer", fields);
      ++mismatches;
    } else {
      LogWarn("found different compact revision values from remote peer", fields);
    }
  }
  if (mismatches > 0)
    return absl::FailedPreconditionError(HexId(self_id) + " found data inconsistency with peers");
  return absl::OkStatus();
}

absl::Status CheckInitialHashKv(Member& member, const TlsFiles& peer_tls, absl::Duration timeout) {
  const uint64_t self_id = member.config().member_id;
  LogInfo("starting initial corruption check", {{"local-member-id", HexId(self_id)}});
  const int64_t revision = member.state_machine().revision();
  auto local = member.state_machine().HashKv(revision);
  if (!local.ok()) return local.status();
  std::vector<PeerHash> peers;
  for (const internalpb::MemberRecord& record : member.state_machine().members().List()) {
    if (record.id() != self_id) peers.push_back(AskPeerHash(record, revision, peer_tls, timeout));
  }
  if (absl::Status st = JudgePeerHashes(self_id, local->hash, local->compact_revision, peers);
      !st.ok())
    return st;
  LogInfo("initial corruption checking passed; no corruption",
          {{"local-member-id", HexId(self_id)}});
  return absl::OkStatus();
}

}  // namespace leasehold::server
