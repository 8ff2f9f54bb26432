#include "server/member/member.h"

#include <algorithm>
#include <chrono>

#include "common/etcd_errors.h"
#include "server/auth/jwt_tokens.h"
#include "server/member/lease_checkpointer.h"
#include "server/member/reconfig_checks.h"
#include "server/observability/log.h"
#include "server/observability/metrics.h"

namespace leasehold::server {

Member::Member(MemberConfig config, storage::Engine* engine, storage::StateMachine* state_machine,
               Proposer* proposer, LeaderForwarder* forwarder, TokenStore* tokens)
    : config_(std::move(config)),
      engine_(engine),
      state_machine_(state_machine),
      proposer_(proposer),
      forwarder_(forwarder),
      tokens_(tokens),
      checkpointer_(std::make_unique<LeaseCheckpointer>(this)) {
  const uint64_t prefix = (config_.member_id & 0xffff) << 48;
  const uint64_t suffix = (static_cast<uint64_t>(NowUnixMs()) & ((1ULL << 40) - 1)) << 8;
  next_id_ = prefix | suffix;
}

Member::~Member() = default;

int64_t Member::NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t Member::NextId() {
  for (;;) {
    uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed) & 0x7fffffffffffffffULL;
    if (id != 0) return static_cast<int64_t>(id);
  }
}

absl::StatusOr<std::string> Member::AuthenticatedUser(std::string_view token,
                                                      absl::FunctionRef<std::string()> cert_user) {
  const storage::AuthTable& auth = state_machine_->auth();
  if (token.empty())
    return config_.client_cert_auth && auth.enabled() ? cert_user() : std::string();
  // A token sent is checked whether or not auth is on, as etcd does; none is valid while it is off
  // (etcd forgets every token when auth is disabled), so a stale one is refused, not ignored.
  if (!auth.enabled()) return errors::InvalidAuthToken();
  if (config_.jwt != nullptr) {
    // etcd's check for JWTs: any auth change since the token was signed voids it (etcd clients then
    // authenticate again).
    std::optional<JwtTokens::Claims> claims = config_.jwt->Verify(token, absl::Now());
    if (!claims) return errors::InvalidAuthToken();
    if (claims->revision < auth.revision()) return errors::AuthOldRevision();
    return std::move(claims->user);
  }
  std::optional<TokenStore::Issued> issued = tokens_->Use(std::string(token), absl::Now());
  if (!issued || issued->enabled_revision != auth.enabled_revision())
    return errors::InvalidAuthToken();
  if (!auth.HasPasswordHash(issued->user, issued->password_hash)) return errors::InvalidAuthToken();
  return std::move(issued->user);
}

void Member::FillHeader(etcdserverpb::ResponseHeader* header) const {
  header->set_cluster_id(config_.cluster_id);
  header->set_member_id(config_.member_id);
  header->set_raft_term(proposer_->term());
  if (header->revision() == 0) header->set_revision(state_machine_->revision());
}

void Member::Submit(internalpb::InternalRequest entry, Proposer::Done done,
                    Proposer::Abandoned abandoned) {
  entry.set_id(static_cast<uint64_t>(NextId()));
  entry.set_time_unix_ms(NowUnixMs());
  if (static_cast<int64_t>(entry.ByteSizeLong()) > config_.max_request_bytes) {
    done(storage::ApplyResult::Error(errors::RequestTooLarge()));
    return;
  }
  // etcd's backpressure: while applying lags far behind committing, new requests are turned away
  // rather than queued without bound.
  if (proposer_->committed_index() > proposer_->applied_index() + kMaxApplyLag) {
    done(storage::ApplyResult::Error(errors::TooManyRequests()));
    return;
  }
  if (config_.quota_backend_bytes > 0 && storage::StateMachine::GrowsStore(entry) &&
      DbSize() + static_cast<int64_t>(entry.ByteSizeLong()) > config_.quota_backend_bytes) {
    // Raised once: refusals that race the alarm's entry (or a lost proposal) re-propose at most
    // every second.
    const int64_t now = entry.time_unix_ms();
    int64_t last = nospace_proposed_ms_.load();
    if (!state_machine_->alarms().Raised(etcdserverpb::NOSPACE) && now - last >= 1000 &&
        nospace_proposed_ms_.compare_exchange_strong(last, now)) {
      LogWarn("database space quota exceeded; raising the NOSPACE alarm",
              {{"quota-bytes", std::to_string(config_.quota_backend_bytes)},
               {"db-size-bytes", std::to_string(DbSize())}});
      internalpb::InternalRequest alarm;
      alarm.set_id(static_cast<uint64_t>(NextId()));
      alarm.set_time_unix_ms(entry.time_unix_ms());
      alarm.mutable_alarm()->set_action(etcdserverpb::AlarmRequest::ACTIVATE);
      alarm.mutable_alarm()->set_memberid(config_.member_id);
      alarm.mutable_alarm()->set_alarm(etcdserverpb::NOSPACE);
      proposer_->Propose(std::move(alarm), [](const storage::ApplyResult&) {});
    }
    done(storage::ApplyResult::Error(errors::NoSpace()));
    return;
  }
  proposer_->Propose(std::move(entry), std::move(done), std::move(abandoned));
}

int64_t Member::DbSize() {
  const int64_t now = NowUnixMs();
  if (now - db_size_measured_ms_.load(std::memory_order_relaxed) >= 100) {
    db_size_measured_ms_.store(now, std::memory_order_relaxed);
    db_size_.store(engine_->ApproximateSize(), std::memory_order_relaxed);
  }
  return db_size_.load(std::memory_order_relaxed);
}

namespace {
absl::Status NotLeader() { return absl::FailedPreconditionError("leasehold: not the leader"); }
}  // namespace

void Member::RenewLease(const etcdserverpb::LeaseKeepAliveRequest& request, RenewDone done) {
  if (!IsLeader() || !proposer_->lease_valid() || !state_machine_->leases().is_primary()) {
    done(NotLeader());
    return;
  }
  etcdserverpb::LeaseKeepAliveResponse response;
  response.set_id(request.id());
  // The header is filled before renewing, so its revision never runs ahead of the renewal.
  FillHeader(response.mutable_header());
  const int64_t now = NowUnixMs();
  int64_t replicated_deadline = 0;
  // A core lease timing a blob lease is the blob adapter's, not the etcd API's to renew.
  const bool blob_core_lease = state_machine_->IsBlobCoreLease(request.id());
  const int64_t ttl =
      blob_core_lease ? 0 : state_machine_->leases().Renew(request.id(), now, &replicated_deadline);
  response.set_ttl(ttl);
  if (ttl > 0) Metrics::Get().CountLeaseRenewed();
  if (ttl == 0 && !blob_core_lease && state_machine_->leases().Contains(request.id())) {
    // Expired, not yet revoked. As etcd does, answer "gone" only once the revoke is applied, so a
    // client told its lease is gone never finds the lease's keys afterwards. The revoke is proposed
    // here rather than waiting for the expiry loop's turn; whichever applies second finds nothing.
    internalpb::InternalRequest revoke;
    revoke.mutable_lease_revoke()->set_id(request.id());
    revoke.set_leader_term(proposer_->leading_term());
    Submit(std::move(revoke), [response = std::move(response),
                               done = std::move(done)](storage::ApplyResult result) mutable {
      if (!result.status.ok() && !absl::IsNotFound(result.status)) {
        done(result.status);  // not revoked (e.g. deposed meanwhile): no answer this time
        return;
      }
      done(std::move(response));
    });
    return;
  }
  const int64_t promised = now + ttl * 1000;
  if (ttl == 0 || promised <= replicated_deadline + config_.lease_allowance_ms) {
    done(std::move(response));
    return;
  }
  checkpointer_->Request(
      request.id(), promised + config_.lease_lookahead_ms,
      [response = std::move(response), done = std::move(done)](absl::Status status) mutable {
        if (absl::IsNotFound(status)) {
          response.set_ttl(0);  // revoked meanwhile: the lease is gone
        } else if (!status.ok()) {
          done(status);  // not replicated: no promise can be made
          return;
        }
        done(std::move(response));
      });
}

absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> Member::LeaseTimeToLive(
    const etcdserverpb::LeaseTimeToLiveRequest& request) {
  if (!IsLeader() || !proposer_->lease_valid() || !state_machine_->leases().is_primary())
    return NotLeader();
  etcdserverpb::LeaseTimeToLiveResponse response;
  response.set_id(request.id());
  auto ttl = state_machine_->leases().Lookup(request.id(), NowUnixMs(), request.keys());
  if (!ttl || state_machine_->IsBlobCoreLease(request.id())) {
    // A missing lease is not an error: TTL -1 and granted TTL 0, as etcd answers.
    response.set_ttl(-1);
  } else {
    response.set_ttl(ttl->remaining_seconds);
    response.set_grantedttl(ttl->granted_ttl_seconds);
    for (auto& key : ttl->keys) response.add_keys(std::move(key));
  }
  FillHeader(response.mutable_header());
  return response;
}

template <typename Response>
void Member::ProposeMembership(raftpb::ConfChangeType type, uint64_t node_id,
                               internalpb::MemberRecord record, Response response,
                               ChangeDone<Response> done) {
  raftpb::ConfChange change;
  change.set_type(type);
  change.set_node_id(node_id);
  record.set_id(node_id);
  record.set_change_id(static_cast<uint64_t>(NextId()));
  change.set_context(record.SerializeAsString());
  proposer_->ProposeConfChange(
      std::move(change),
      [this, response = std::move(response), done = std::move(done)](absl::Status st) mutable {
        if (!st.ok()) return done(st);
        ListMembers(response.mutable_members());
        done(std::move(response));
      });
}

void Member::AddMember(const etcdserverpb::MemberAddRequest& request,
                       ChangeDone<etcdserverpb::MemberAddResponse> done) {
  if (!IsLeader()) return done(errors::NoLeader());
  const std::vector<internalpb::MemberRecord> members = state_machine_->members().List();
  for (const auto& existing : members) {
    for (const auto& url : existing.peer_urls()) {
      if (std::find(request.peerurls().begin(), request.peerurls().end(), url) !=
          request.peerurls().end()) {
        return done(errors::PeerUrlExists());
      }
    }
  }
  if (absl::Status st = MayAddMember(members, request.islearner(), config_.strict_reconfig_check);
      !st.ok())
    return done(st);
  internalpb::MemberRecord record;
  *record.mutable_peer_urls() = request.peerurls();
  record.set_is_learner(request.islearner());
  // A fresh id, distinct from every earlier member's even for reused URLs; the new member learns it
  // from the cluster when it joins.
  const uint64_t id = static_cast<uint64_t>(NextId()) | (1ULL << 63);
  etcdserverpb::MemberAddResponse response;
  etcdserverpb::Member* added = response.mutable_member();
  added->set_id(id);
  *added->mutable_peerurls() = request.peerurls();
  added->set_islearner(request.islearner());
  ProposeMembership(request.islearner() ? raftpb::CONF_ADD_LEARNER : raftpb::CONF_ADD_VOTER, id,
                    std::move(record), std::move(response), std::move(done));
}

void Member::RemoveMember(const etcdserverpb::MemberRemoveRequest& request,
                          ChangeDone<etcdserverpb::MemberRemoveResponse> done) {
  if (!IsLeader()) return done(errors::NoLeader());
  const std::vector<internalpb::MemberRecord> members = state_machine_->members().List();
  if (std::none_of(members.begin(), members.end(),
                   [&](const auto& m) { return m.id() == request.id(); })) {
    return done(errors::MemberNotFound());
  }
  if (absl::Status st = MayRemoveMember(members, request.id(), config_.strict_reconfig_check);
      !st.ok())
    return done(st);
  ProposeMembership(raftpb::CONF_REMOVE_NODE, request.id(), internalpb::MemberRecord(),
                    etcdserverpb::MemberRemoveResponse(), std::move(done));
}

void Member::PromoteLearner(const etcdserverpb::MemberPromoteRequest& request,
                            ChangeDone<etcdserverpb::MemberPromoteResponse> done) {
  if (!IsLeader()) return done(errors::NoLeader());
  const std::vector<internalpb::MemberRecord> members = state_machine_->members().List();
  auto it = std::find_if(members.begin(), members.end(),
                         [&](const auto& m) { return m.id() == request.id(); });
  if (it == members.end()) return done(errors::MemberNotFound());
  if (!it->is_learner()) return done(errors::MemberNotLearner());
  if (absl::Status st = MayPromoteMember(members, request.id(), config_.strict_reconfig_check);
      !st.ok())
    return done(st);
  ProposeMembership(raftpb::CONF_PROMOTE_LEARNER, request.id(), internalpb::MemberRecord(),
                    etcdserverpb::MemberPromoteResponse(), std::move(done));
}

absl::Status Member::LearnerRefusal() const {
  if (!state_machine_->members().IsLearner(config_.member_id)) return absl::OkStatus();
  return errors::NotSupportedForLearner();
}

void Member::ListMembers(google::protobuf::RepeatedPtrField<etcdserverpb::Member>* out) {
  for (const internalpb::MemberRecord& record : state_machine_->members().List()) {
    etcdserverpb::Member* member = out->Add();
    member->set_id(record.id());
    for (const auto& url : record.peer_urls()) member->add_peerurls(url);
    member->set_islearner(record.is_learner());
    // This member shows itself as it publishes itself: etcd answers clients only once its name and
    // client URLs are applied, while this member answers from its start, before its publish
    // applies.
    if (record.id() == config_.member_id) {
      member->set_name(config_.name);
      for (const auto& url : config_.client_urls) member->add_clienturls(url);
      continue;
    }
    // A member that has not published yet shows no name and no client URLs, as in etcd.
    member->set_name(record.name());
    for (const auto& url : record.client_urls()) member->add_clienturls(url);
  }
}

}  // namespace leasehold::server
