// What every gRPC service of a member shares: its identity, the state machine it reads, the
// proposer it writes through, the way to the leader for leader-only lease calls, and the limits it
// enforces. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "etcdserverpb/rpc.pb.h"
#include "server/auth/token_store.h"
#include "server/member/leader_forwarder.h"
#include "server/member/proposer.h"
#include "storage/apply/state_machine.h"
#include "storage/backend/engine.h"

namespace leasehold::server {

class JwtTokens;
class LeaseCheckpointer;

// What etcd allows over --max-request-bytes for gRPC's own framing: the most a client may send, and
// the size past which a watch response that accepts fragments is split.
inline constexpr int64_t kGrpcOverheadBytes = 512 * 1024;

struct MemberConfig {
  std::string name = "default";
  uint64_t cluster_id = 0;
  uint64_t member_id = 0;
  std::vector<std::string> client_urls;
  std::vector<std::string> peer_urls;
  int64_t max_request_bytes = 1536 * 1024;
  int max_txn_ops = 128;
  // A new leader adds this to every replicated lease deadline (NodeLoop's promote allowance): a
  // renewal whose deadline this covers is acknowledged at once; a later one is first checkpointed.
  int64_t lease_allowance_ms = 500;
  // A checkpointed renewal records this much beyond the promised deadline, so a lease renewed often
  // is checkpointed at most about once per (allowance + lookahead). allowance + lookahead is what
  // an abandoned lease may outlive its TTL by: keep it within an election timeout.
  int64_t lease_lookahead_ms = 500;
  // etcd's request timeout (5 s plus two election timeouts): how long a keep-alive or a
  // time-to-live waits for a leader able to answer it.
  int64_t request_timeout_ms = 7000;
  // --quota-backend-bytes as etcd resolves it: a write that would take the engine past this many
  // bytes raises NOSPACE; 0 means no quota.
  int64_t quota_backend_bytes = 0;
  // --bcrypt-cost: how slow password hashes are to make (and to guess).
  int bcrypt_cost = 10;
  // --strict-reconfig-check: refuse membership changes that would leave too few started voters.
  bool strict_reconfig_check = true;
  // --client-cert-auth: clients present verified certificates, whose common name is the user of a
  // call without a token while auth is enabled.
  bool client_cert_auth = false;
  // --auth-token jwt: tokens are JWTs checked with these keys (not owned); null for simple tokens.
  const JwtTokens* jwt = nullptr;
  // The etcd API version we answer as (etcd clients gate features on it).
  std::string version = "3.4.23";
};

class Member {
 public:
  // None of the pointers is owned.
  Member(MemberConfig config, storage::Engine* engine, storage::StateMachine* state_machine,
         Proposer* proposer, LeaderForwarder* forwarder, TokenStore* tokens);
  ~Member();

  const MemberConfig& config() const { return config_; }
  storage::StateMachine& state_machine() { return *state_machine_; }
  storage::Engine& engine() { return *engine_; }
  Proposer& proposer() { return *proposer_; }
  LeaderForwarder& forwarder() { return *forwarder_; }
  TokenStore& tokens() { return *tokens_; }

  // The user a call's auth token names (etcd's v3 auth). Unauthenticated "invalid auth token" when
  // it carries one while auth is disabled (as on etcd, which then knows no token), or one unknown
  // here, expired, or issued before the user's password changed, the user was deleted or auth was
  // last enabled. Without a token: with --client-cert-auth and auth enabled, what `cert_user`
  // returns (the common name of the client's verified certificate, etcd's TLS common-name
  // authentication; asked only then, as finding it costs every call); else "".
  [[nodiscard]] absl::StatusOr<std::string> AuthenticatedUser(
      std::string_view token,
      absl::FunctionRef<std::string()> cert_user = [] { return std::string(); });

  // Whether this member is the current leader (it may still be unsure of it).
  bool IsLeader() const { return proposer_->leader_id() == config_.member_id; }
  // etcd 3.4's rule for a learner: it answers only Maintenance Status and serializable Ranges.
  // Every other client call, streams included, is refused before it does anything, with Unavailable
  // "etcdserver: rpc not supported for learner", so that clients move on to a voting member. Each
  // client-facing handler asks this first; OK unless this member is a learner.
  [[nodiscard]] absl::Status LearnerRefusal() const;
  // The leader's answers to the leader-only lease calls. FailedPrecondition ("not the leader")
  // unless this member leads, surely (Proposer::lease_valid) and with the expiry queue in place. A
  // renewal is answered once its deadline is covered by the replicated one (see LeaseCheckpointer),
  // so `done` may run later, on another thread; it never runs with a TTL the next leader would not
  // honour. A lease revoked meanwhile is answered with TTL 0.
  using RenewDone = std::function<void(absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse>)>;
  void RenewLease(const etcdserverpb::LeaseKeepAliveRequest& request, RenewDone done);
  [[nodiscard]] absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& request);

  // The leader's half of etcd's membership changes; a follower forwards them here, since only the
  // leader knows which voters it hears from and how far a learner has caught up. Each checks the
  // member table (etcd's "member not found", "Peer URLs already exists", "can only promote a
  // learner member", and the strict reconfiguration checks of reconfig_checks.h) and proposes the
  // change; the node loop adds the leader's own checks (connectivity, a learner in sync). "no
  // leader" (Unavailable) unless this member leads, or while it has not yet heard from every live
  // voter (nothing proposed: the caller may ask again). `done` gets the member list once the change
  // is applied here; the header is the caller's to fill. It runs inline for a refusal made here,
  // and otherwise later, on the node loop's responder thread.
  template <typename Response>
  using ChangeDone = std::function<void(absl::StatusOr<Response>)>;
  void AddMember(const etcdserverpb::MemberAddRequest& request,
                 ChangeDone<etcdserverpb::MemberAddResponse> done);
  void RemoveMember(const etcdserverpb::MemberRemoveRequest& request,
                    ChangeDone<etcdserverpb::MemberRemoveResponse> done);
  void PromoteLearner(const etcdserverpb::MemberPromoteRequest& request,
                      ChangeDone<etcdserverpb::MemberPromoteResponse> done);
  // The member table as etcd lists it.
  void ListMembers(google::protobuf::RepeatedPtrField<etcdserverpb::Member>* out);

  // Sets cluster_id, member_id and raft_term; the revision too when the caller left it at 0.
  void FillHeader(etcdserverpb::ResponseHeader* header) const;

  // etcd's limit on committed entries waiting to be applied, past which requests are refused.
  static constexpr uint64_t kMaxApplyLag = 5000;

  // Stamps the entry with a request id and the current time, refuses it when larger than
  // --max-request-bytes (etcd's "request is too large") or while more than kMaxApplyLag committed
  // entries wait to be applied (etcd's "too many requests"), and proposes it. An entry that grows
  // the store past the quota is refused with "database space exceeded" and raises NOSPACE for this
  // member (through the log, as etcd does), which then refuses such entries on every member.
  // `abandoned`: see Proposer::Propose.
  void Submit(internalpb::InternalRequest entry, Proposer::Done done,
              Proposer::Abandoned abandoned = nullptr);
  // The engine's size on disk, re-measured at most every 100 ms (measuring lists the directory).
  int64_t DbSize();

  // A fresh id, unique across this member's lifetime and across members (etcd's layout: the low
  // 16 bits of the member id, then a millisecond timestamp taken at start, then a counter).
  int64_t NextId();

  static int64_t NowUnixMs();

 private:
  // Proposes the change `type` of member `node_id`, with `record` (given that id and a change id)
  // as its context; once applied here, `done` gets `response` with the member list.
  template <typename Response>
  void ProposeMembership(raftpb::ConfChangeType type, uint64_t node_id,
                         internalpb::MemberRecord record, Response response,
                         ChangeDone<Response> done);

  MemberConfig config_;
  storage::Engine* engine_;
  storage::StateMachine* state_machine_;
  Proposer* proposer_;
  LeaderForwarder* forwarder_;
  TokenStore* tokens_;
  std::unique_ptr<LeaseCheckpointer> checkpointer_;
  std::atomic<uint64_t> next_id_;
  std::atomic<int64_t> db_size_{0};
  std::atomic<int64_t> db_size_measured_ms_{0};
  std::atomic<int64_t> nospace_proposed_ms_{0};
};

}  // namespace leasehold::server
