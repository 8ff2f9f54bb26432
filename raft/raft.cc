// Raft state machine implementation.
#include "raft/raft.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "raft/check.h"
#include "raft/quorum.h"

namespace leasehold::raft {

namespace {

bool IsLocalType(pb::MessageType t) { return t == pb::MSG_PROPOSE || t == pb::MSG_READ_INDEX; }

pb::MessageType VoteResponseType(pb::MessageType t) {
  return t == pb::MSG_VOTE ? pb::MSG_VOTE_RESPONSE : pb::MSG_PRE_VOTE_RESPONSE;
}

}  // namespace

absl::Status Config::Validate() const {
  if (id == kNoNode) return absl::InvalidArgumentError("raft: id must not be zero");
  if (heartbeat_ticks <= 0) return absl::InvalidArgumentError("raft: heartbeat_ticks must be > 0");
  if (election_ticks <= heartbeat_ticks) {
    return absl::InvalidArgumentError("raft: election_ticks must exceed heartbeat_ticks");
  }
  if (storage == nullptr) return absl::InvalidArgumentError("raft: storage is required");
  if (max_inflight_msgs == 0)
    return absl::InvalidArgumentError("raft: max_inflight_msgs must be > 0");
  return absl::OkStatus();
}

const char* RoleName(Role role) {
  switch (role) {
    case Role::kFollower:
      return "follower";
    case Role::kPreCandidate:
      return "pre-candidate";
    case Role::kCandidate:
      return "candidate";
    case Role::kLeader:
      return "leader";
  }
  return "?";
}

Raft::Raft(const Config& config)
    : id_(config.id),
      election_ticks_(config.election_ticks),
      heartbeat_ticks_(config.heartbeat_ticks),
      max_size_per_msg_(config.max_size_per_msg),
      max_inflight_(config.max_inflight_msgs),
      check_quorum_(config.check_quorum),
      pre_vote_(config.pre_vote),
      forward_proposals_(config.forward_proposals),
      log_(config.storage),
      rng_(config.random_seed) {}

absl::StatusOr<std::unique_ptr<Raft>> Raft::Create(const Config& config) {
  if (absl::Status s = config.Validate(); !s.ok()) return s;
  std::unique_ptr<Raft> r(new Raft(config));
  InitialState init = config.storage->GetInitialState();
  pb::ConfState cs = init.conf_state;
  if (cs.voters().empty() && cs.learners().empty()) {
    for (uint64_t p : config.peers) cs.add_voters(p);
  }
  r->SetMembership(cs);
  const pb::HardState& hs = init.hard_state;
  if (hs.term() != 0 || hs.vote() != 0 || hs.commit() != 0) {
    if (hs.commit() < r->log_.committed() || hs.commit() > r->log_.LastIndex()) {
      return absl::DataLossError(absl::StrCat("raft: hard state commit ", hs.commit(),
                                              " out of range [", r->log_.committed(), ", ",
                                              r->log_.LastIndex(), "]"));
    }
    r->log_.CommitTo(hs.commit());
    r->term_ = hs.term();
    r->vote_ = hs.vote();
  }
  if (config.applied > 0) {
    if (config.applied > r->log_.committed()) {
      return absl::InvalidArgumentError("raft: applied index beyond commit index");
    }
    r->log_.AppliedTo(config.applied);
  }
  r->BecomeFollower(r->term_, kNoNode);
  return r;
}

pb::HardState Raft::hard_state() const {
  pb::HardState hs;
  hs.set_term(term_);
  hs.set_vote(vote_);
  hs.set_commit(log_.committed());
  return hs;
}

pb::ConfState Raft::conf_state() const {
  pb::ConfState cs;
  for (const auto& [id, pr] : progress_) {
    if (pr.is_learner)
      cs.add_learners(id);
    else
      cs.add_voters(id);
  }
  return cs;
}

bool Raft::IsVoter(uint64_t id) const {
  auto it = progress_.find(id);
  return it != progress_.end() && !it->second.is_learner;
}

std::vector<uint64_t> Raft::Voters() const {
  std::vector<uint64_t> out;
  for (const auto& [id, pr] : progress_) {
    if (!pr.is_learner) out.push_back(id);
  }
  return out;
}

void Raft::SetMembership(const pb::ConfState& cs) {
  std::map<uint64_t, Progress> next;
  auto add = [&](uint64_t id, bool learner) {
    auto it = progress_.find(id);
    Progress pr = it != progress_.end() ? it->second : Progress(max_inflight_);
    if (it == progress_.end()) {
      pr.next_index = log_.LastIndex() + 1;
      pr.recent_active = true;
      pr.lease_ack_tick = 0;
    }
    pr.is_learner = learner;
    next.emplace(id, std::move(pr));
  };
  for (uint64_t v : cs.voters()) add(v, false);
  for (uint64_t l : cs.learners()) add(l, true);
  progress_ = std::move(next);
}

// --- role transitions -------------------------------------------------------------------------

void Raft::Reset(uint64_t term) {
  if (term_ != term) {
    term_ = term;
    vote_ = kNoNode;
  }
  lead_ = kNoNode;
  election_elapsed_ = 0;
  heartbeat_elapsed_ = 0;
  ResetRandomizedElectionTimeout();
  AbortLeaderTransfer();
  votes_.clear();
  for (auto& [id, pr] : progress_) {
    const bool learner = pr.is_learner;
    pr = Progress(max_inflight_);
    pr.is_learner = learner;
    pr.next_index = log_.LastIndex() + 1;
    if (id == id_) pr.match_index = log_.LastIndex();
  }
  pending_conf_index_ = 0;
  read_only_.Reset();
  pending_read_requests_.clear();
  broadcast_pending_ = false;
}

void Raft::ResetRandomizedElectionTimeout() {
  // Plain modulo on the engine's output: identical across standard libraries for a given seed.
  randomized_election_ticks_ =
      election_ticks_ + static_cast<int>(rng_() % static_cast<uint64_t>(election_ticks_));
}

void Raft::BecomeFollower(uint64_t term, uint64_t lead) {
  Reset(term);
  lead_ = lead;
  role_ = Role::kFollower;
}

void Raft::BecomePreCandidate() {
  RAFT_CHECK(role_ != Role::kLeader);
  // Neither the term nor the vote change: a pre-election is invisible if it fails.
  votes_.clear();
  lead_ = kNoNode;
  role_ = Role::kPreCandidate;
}

void Raft::BecomeCandidate() {
  RAFT_CHECK(role_ != Role::kLeader);
  Reset(term_ + 1);
  vote_ = id_;
  role_ = Role::kCandidate;
}

void Raft::BecomeLeader() {
  RAFT_CHECK(role_ != Role::kFollower);
  Reset(term_);
  lead_ = id_;
  role_ = Role::kLeader;
  auto self = progress_.find(id_);
  if (self != progress_.end()) self->second.BecomeReplicate();
  // Conservatively treat any tail entry as a possible pending conf change.
  pending_conf_index_ = log_.LastIndex();
  for (auto& [id, pr] : progress_) pr.lease_ack_tick = 0;
  // A no-op from the new term lets earlier-term entries commit and gates ReadIndex.
  AppendEntries({pb::Entry()});
}

// --- time ---------------------------------------------------------------------------------------

void Raft::Tick() {
  ++now_;
  if (role_ == Role::kLeader)
    TickHeartbeat();
  else
    TickElection();
}

void Raft::TickElection() {
  ++election_elapsed_;
  if (IsVoter(id_) && election_elapsed_ >= randomized_election_ticks_) {
    election_elapsed_ = 0;
    StartElection(pre_vote_, /*transfer=*/false);
  }
}

void Raft::TickHeartbeat() {
  ++heartbeat_elapsed_;
  ++election_elapsed_;
  if (election_elapsed_ >= election_ticks_) {
    election_elapsed_ = 0;
    if (check_quorum_ && !QuorumActive()) {
      BecomeFollower(term_, kNoNode);
      return;
    }
    // A transfer that did not finish within an election timeout is abandoned.
    AbortLeaderTransfer();
  }
  if (heartbeat_elapsed_ >= heartbeat_ticks_) {
    heartbeat_elapsed_ = 0;
    BroadcastHeartbeat(std::string());
  }
}

bool Raft::QuorumActive() {
  size_t active = 0, voters = 0;
  for (auto& [id, pr] : progress_) {
    if (!pr.is_learner) {
      ++voters;
      if (id == id_ || pr.recent_active) ++active;
    }
    if (id != id_) pr.recent_active = false;
  }
  return voters > 0 && active >= QuorumSize(voters);
}

bool Raft::LeaseValid() const {
  if (role_ != Role::kLeader || !check_quorum_ || lead_transferee_ != kNoNode) return false;
  size_t fresh = 0, voters = 0;
  for (const auto& [id, pr] : progress_) {
    if (pr.is_learner) continue;
    ++voters;
    if (PeerActive(id)) ++fresh;
  }
  return IsVoter(id_) && fresh >= QuorumSize(voters);
}

bool Raft::PeerActive(uint64_t id) const {
  if (role_ != Role::kLeader) return false;
  if (id == id_) return true;
  auto it = progress_.find(id);
  return it != progress_.end() && it->second.lease_ack_tick > 0 &&
         now_ - it->second.lease_ack_tick < static_cast<uint64_t>(election_ticks_);
}

bool Raft::SoleMemberLeader() const {
  return role_ == Role::kLeader && progress_.size() == 1 && IsVoter(id_) &&
         CommittedInCurrentTerm();
}

// --- elections ----------------------------------------------------------------------------------

bool Raft::HasUnappliedConfChange() const {
  if (log_.committed() <= log_.applied()) return false;
  absl::StatusOr<std::vector<pb::Entry>> ents =
      log_.Slice(std::max(log_.applied() + 1, log_.FirstIndex()), log_.committed() + 1, UINT64_MAX);
  if (!ents.ok()) return false;
  for (const pb::Entry& e : *ents) {
    if (e.type() == pb::ENTRY_CONF_CHANGE) return true;
  }
  return false;
}

absl::Status Raft::Campaign() {
  if (role_ == Role::kLeader) return absl::FailedPreconditionError("raft: already leader");
  if (!IsVoter(id_)) return absl::FailedPreconditionError("raft: not a voter");
  StartElection(pre_vote_, false);
  return absl::OkStatus();
}

void Raft::StartElection(bool pre_vote, bool transfer) {
  if (!IsVoter(id_)) return;
  // Campaigning under a membership that committed entries are about to change is unsafe.
  if (HasUnappliedConfChange()) return;
  uint64_t vote_term;
  pb::MessageType type;
  if (pre_vote) {
    BecomePreCandidate();
    type = pb::MSG_PRE_VOTE;
    vote_term = term_ + 1;
  } else {
    BecomeCandidate();
    type = pb::MSG_VOTE;
    vote_term = term_;
  }
  RecordVote(id_, true);
  if (Poll() == VoteResult::kWon) {
    if (pre_vote) {
      StartElection(false, transfer);
    } else {
      BecomeLeader();
    }
    return;
  }
  const uint64_t last_index = log_.LastIndex();
  const uint64_t last_term = log_.LastTerm();
  for (const auto& [id, pr] : progress_) {
    if (id == id_ || pr.is_learner) continue;
    pb::Message m;
    m.set_type(type);
    m.set_to(id);
    m.set_term(vote_term);
    m.set_index(last_index);
    m.set_log_term(last_term);
    m.set_transfer(transfer);
    Send(std::move(m));
  }
}

void Raft::RecordVote(uint64_t from, bool granted) { votes_.emplace(from, granted); }

VoteResult Raft::Poll() const {
  size_t voters = 0, granted = 0, rejected = 0;
  for (const auto& [id, pr] : progress_) {
    if (pr.is_learner) continue;
    ++voters;
    auto it = votes_.find(id);
    if (it == votes_.end()) continue;
    if (it->second)
      ++granted;
    else
      ++rejected;
  }
  return TallyVotes(voters, granted, rejected);
}

void Raft::HandleVoteRequest(const pb::Message& m) {
  const bool pre = m.type() == pb::MSG_PRE_VOTE;
  const bool can_vote =
      vote_ == m.from() || (vote_ == kNoNode && lead_ == kNoNode) || (pre && m.term() > term_);
  pb::Message resp;
  resp.set_to(m.from());
  resp.set_type(VoteResponseType(m.type()));
  if (can_vote && log_.IsUpToDate(m.index(), m.log_term())) {
    // Answer with the requester's term so that it counts the vote; a real vote also binds us.
    resp.set_term(m.term());
    if (!pre) {
      election_elapsed_ = 0;
      vote_ = m.from();
    }
  } else {
    resp.set_term(term_);
    resp.set_reject(true);
  }
  Send(std::move(resp));
}

// --- message dispatch ---------------------------------------------------------------------------

absl::Status Raft::Step(pb::Message m) {
  if (m.term() == 0) {
    // Local request (or a proposal / read forwarded by a follower): no term semantics.
  } else if (m.term() > term_) {
    const bool is_vote = m.type() == pb::MSG_VOTE || m.type() == pb::MSG_PRE_VOTE;
    if (is_vote) {
      const bool in_lease =
          check_quorum_ && lead_ != kNoNode && election_elapsed_ < election_ticks_;
      if (!m.transfer() && in_lease) return absl::OkStatus();  // ignore: our leader is alive
    }
    if (m.type() == pb::MSG_PRE_VOTE) {
      // A pre-vote never changes our term.
    } else if (m.type() == pb::MSG_PRE_VOTE_RESPONSE && !m.reject()) {
      // Granted pre-votes carry the future term; we adopt it only when the real election starts.
    } else if (m.type() == pb::MSG_APPEND || m.type() == pb::MSG_HEARTBEAT ||
               m.type() == pb::MSG_SNAPSHOT) {
      BecomeFollower(m.term(), m.from());
    } else {
      BecomeFollower(m.term(), kNoNode);
    }
  } else if (m.term() < term_) {
    if ((check_quorum_ || pre_vote_) &&
        (m.type() == pb::MSG_APPEND || m.type() == pb::MSG_HEARTBEAT)) {
      // Tell a stale leader about the newer term so it steps down (it would otherwise never
      // learn it from nodes that ignore its messages and cannot be disrupted by its votes).
      pb::Message resp;
      resp.set_to(m.from());
      resp.set_type(pb::MSG_APPEND_RESPONSE);
      Send(std::move(resp));
    } else if (m.type() == pb::MSG_PRE_VOTE) {
      pb::Message resp;
      resp.set_to(m.from());
      resp.set_type(pb::MSG_PRE_VOTE_RESPONSE);
      resp.set_term(term_);
      resp.set_reject(true);
      Send(std::move(resp));
    }
    return absl::OkStatus();
  }

  if (m.type() == pb::MSG_VOTE || m.type() == pb::MSG_PRE_VOTE) {
    HandleVoteRequest(m);
    return absl::OkStatus();
  }
  switch (role_) {
    case Role::kLeader:
      return StepLeader(m);
    case Role::kPreCandidate:
    case Role::kCandidate:
      return StepCandidate(m);
    case Role::kFollower:
      return StepFollower(m);
  }
  return absl::OkStatus();
}

absl::Status Raft::StepLeader(pb::Message& m) {
  switch (m.type()) {
    case pb::MSG_PROPOSE: {
      if (m.entries().empty()) return absl::InvalidArgumentError("raft: empty proposal");
      if (!progress_.contains(id_)) {
        return absl::FailedPreconditionError("raft: leader was removed from the configuration");
      }
      if (lead_transferee_ != kNoNode) {
        return absl::UnavailableError("raft: leadership transfer in progress; proposal dropped");
      }
      std::vector<pb::Entry> entries(m.entries().begin(), m.entries().end());
      for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].type() != pb::ENTRY_CONF_CHANGE) continue;
        if (pending_conf_index_ > log_.applied()) {
          return absl::FailedPreconditionError(
              "raft: a membership change is already pending; proposal dropped");
        }
        pending_conf_index_ = log_.LastIndex() + 1 + i;
      }
      AppendEntries(std::move(entries));
      broadcast_pending_ = true;  // batched: one append per follower per TakeMessages()
      return absl::OkStatus();
    }
    case pb::MSG_READ_INDEX: {
      if (Voters().size() == 1 && IsVoter(id_)) {
        RespondToRead(PendingRead{log_.committed(), m.from(), m.context(), {}});
        return absl::OkStatus();
      }
      if (!CommittedInCurrentTerm()) {
        pending_read_requests_.push_back(std::move(m));
        return absl::OkStatus();
      }
      ServeReadIndex(m);
      return absl::OkStatus();
    }
    default:
      break;
  }
  auto it = progress_.find(m.from());
  if (it == progress_.end()) return absl::OkStatus();
  Progress& pr = it->second;
  switch (m.type()) {
    case pb::MSG_APPEND_RESPONSE:
      HandleAppendResponse(m, pr);
      break;
    case pb::MSG_HEARTBEAT_RESPONSE:
      HandleHeartbeatResponse(m, pr);
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

void Raft::HandleAppendResponse(const pb::Message& m, Progress& pr) {
  pr.recent_active = true;
  pr.lease_ack_tick = std::max(pr.lease_ack_tick, m.lease_tick());
  const uint64_t from = m.from();
  if (m.reject()) {
    uint64_t next_probe = m.reject_hint();
    if (m.log_term() > 0) {
      // Skip every entry of ours whose term is above the follower's term at the hint: none of
      // them can match.
      next_probe = log_.FindConflictByTerm(m.reject_hint(), m.log_term()).first;
    }
    if (pr.MaybeDecrTo(m.index(), next_probe)) {
      if (pr.state == ProgressState::kReplicate) pr.BecomeProbe();
      SendAppend(from);
    }
    return;
  }
  const bool was_paused = pr.IsPaused();
  if (!pr.MaybeUpdate(m.index())) {
    if (was_paused && !pr.IsPaused()) SendAppend(from);
    return;
  }
  switch (pr.state) {
    case ProgressState::kProbe:
      pr.BecomeReplicate();
      break;
    case ProgressState::kSnapshot:
      if (pr.match_index >= pr.pending_snapshot) pr.BecomeReplicate();
      break;
    case ProgressState::kReplicate:
      pr.inflights.FreeLE(m.index());
      break;
  }
  if (MaybeCommit()) {
    BroadcastAppend();
  } else if (was_paused) {
    SendAppend(from);
  }
  // Fill the window: keep sending while there are entries and room.
  while (progress_.contains(from) && MaybeSendAppend(from, false)) {
  }
  if (from == lead_transferee_ && progress_.contains(from) &&
      progress_.at(from).match_index == log_.LastIndex()) {
    SendTimeoutNow(from);
  }
}

void Raft::HandleHeartbeatResponse(const pb::Message& m, Progress& pr) {
  pr.recent_active = true;
  pr.lease_ack_tick = std::max(pr.lease_ack_tick, m.lease_tick());
  pr.probe_sent = false;
  if (pr.state == ProgressState::kReplicate && pr.inflights.Full()) pr.inflights.FreeFirstOne();
  const uint64_t from = m.from();
  if (pr.match_index < log_.LastIndex()) SendAppend(from);
  if (!m.context().empty() && ReadQuorumReached(read_only_.RecvAck(from, m.context()))) {
    for (const PendingRead& read : read_only_.Advance(m.context())) RespondToRead(read);
  }
}

absl::Status Raft::StepCandidate(pb::Message& m) {
  const pb::MessageType my_response =
      role_ == Role::kPreCandidate ? pb::MSG_PRE_VOTE_RESPONSE : pb::MSG_VOTE_RESPONSE;
  switch (m.type()) {
    case pb::MSG_PROPOSE:
      return absl::UnavailableError("raft: no leader (election in progress); proposal dropped");
    case pb::MSG_READ_INDEX:
      return absl::UnavailableError("raft: no leader (election in progress); read dropped");
    case pb::MSG_APPEND:
      BecomeFollower(m.term(), m.from());
      HandleAppend(m);
      break;
    case pb::MSG_HEARTBEAT:
      BecomeFollower(m.term(), m.from());
      HandleHeartbeat(m);
      break;
    case pb::MSG_SNAPSHOT:
      BecomeFollower(m.term(), m.from());
      HandleSnapshot(m);
      break;
    case pb::MSG_VOTE_RESPONSE:
    case pb::MSG_PRE_VOTE_RESPONSE: {
      if (m.type() != my_response) break;
      RecordVote(m.from(), !m.reject());
      switch (Poll()) {
        case VoteResult::kWon:
          if (role_ == Role::kPreCandidate) {
            StartElection(false, m.transfer());
          } else {
            BecomeLeader();
            BroadcastAppend();
          }
          break;
        case VoteResult::kLost:
          BecomeFollower(term_, kNoNode);
          break;
        case VoteResult::kPending:
          break;
      }
      break;
    }
    default:
      break;
  }
  return absl::OkStatus();
}

absl::Status Raft::StepFollower(pb::Message& m) {
  switch (m.type()) {
    case pb::MSG_PROPOSE:
      if (lead_ == kNoNode) return absl::UnavailableError("raft: no leader; proposal dropped");
      if (!forward_proposals_) {
        return absl::FailedPreconditionError(
            "raft: not the leader and proposal forwarding is disabled; proposal dropped");
      }
      m.set_to(lead_);
      Send(std::move(m));
      return absl::OkStatus();
    case pb::MSG_READ_INDEX:
      if (lead_ == kNoNode) return absl::UnavailableError("raft: no leader; read dropped");
      m.set_to(lead_);
      Send(std::move(m));
      return absl::OkStatus();
    case pb::MSG_APPEND:
      election_elapsed_ = 0;
      lead_ = m.from();
      HandleAppend(m);
      break;
    case pb::MSG_HEARTBEAT:
      election_elapsed_ = 0;
      lead_ = m.from();
      HandleHeartbeat(m);
      break;
    case pb::MSG_SNAPSHOT:
      election_elapsed_ = 0;
      lead_ = m.from();
      HandleSnapshot(m);
      break;
    case pb::MSG_TIMEOUT_NOW:
      // Leadership transfer: campaign at once, skipping the pre-vote, overriding leases.
      StartElection(false, true);
      break;
    case pb::MSG_READ_INDEX_RESPONSE:
      read_states_.push_back(ReadState{m.index(), m.context()});
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

// --- follower handlers --------------------------------------------------------------------------

void Raft::HandleAppend(const pb::Message& m) {
  pb::Message resp;
  resp.set_to(m.from());
  resp.set_type(pb::MSG_APPEND_RESPONSE);
  resp.set_lease_tick(m.lease_tick());
  if (m.index() < log_.committed()) {
    resp.set_index(log_.committed());
    Send(std::move(resp));
    return;
  }
  const std::vector<pb::Entry> ents(m.entries().begin(), m.entries().end());
  if (std::optional<uint64_t> last = log_.MaybeAppend(m.index(), m.log_term(), m.commit(), ents)) {
    resp.set_index(*last);
  } else {
    // Hint: the last index at or below the leader's anchor whose term could still match.
    const uint64_t probe = std::min(m.index(), log_.LastIndex());
    auto [hint_index, hint_term] = log_.FindConflictByTerm(probe, m.log_term());
    resp.set_index(m.index());
    resp.set_reject(true);
    resp.set_reject_hint(hint_index);
    resp.set_log_term(hint_term);
  }
  Send(std::move(resp));
}

void Raft::HandleHeartbeat(const pb::Message& m) {
  log_.CommitTo(std::min(m.commit(), log_.LastIndex()));
  pb::Message resp;
  resp.set_to(m.from());
  resp.set_type(pb::MSG_HEARTBEAT_RESPONSE);
  resp.set_context(m.context());
  resp.set_lease_tick(m.lease_tick());
  Send(std::move(resp));
}

void Raft::HandleSnapshot(const pb::Message& m) {
  pb::Message resp;
  resp.set_to(m.from());
  resp.set_type(pb::MSG_APPEND_RESPONSE);
  if (RestoreSnapshot(m.snapshot())) {
    resp.set_index(log_.LastIndex());
  } else {
    resp.set_index(log_.committed());
  }
  Send(std::move(resp));
}

bool Raft::RestoreSnapshot(const pb::Snapshot& snapshot) {
  const auto& meta = snapshot.metadata();
  if (meta.index() <= log_.committed()) return false;
  if (log_.MatchTerm(meta.index(), meta.term())) {
    // We already hold the snapshot's last entry: just learn that it is committed.
    log_.CommitTo(meta.index());
    return false;
  }
  log_.Restore(snapshot);
  SetMembership(meta.conf_state());
  for (auto& [id, pr] : progress_) {
    pr.match_index = id == id_ ? log_.LastIndex() : 0;
    pr.next_index = log_.LastIndex() + 1;
  }
  return true;
}

// --- leader machinery ---------------------------------------------------------------------------

void Raft::Send(pb::Message m) {
  m.set_from(id_);
  const pb::MessageType t = m.type();
  if (t == pb::MSG_VOTE || t == pb::MSG_PRE_VOTE || t == pb::MSG_VOTE_RESPONSE ||
      t == pb::MSG_PRE_VOTE_RESPONSE) {
    RAFT_CHECK(m.term() != 0);
  } else if (IsLocalType(t)) {
    m.set_term(0);
  } else {
    m.set_term(term_);
  }
  msgs_.push_back(std::move(m));
}

void Raft::AppendEntries(std::vector<pb::Entry> entries) {
  uint64_t index = log_.LastIndex();
  for (pb::Entry& e : entries) {
    e.set_term(term_);
    e.set_index(++index);
  }
  const uint64_t last = log_.Append(entries);
  auto self = progress_.find(id_);
  if (self != progress_.end()) self->second.MaybeUpdate(last);
  if (MaybeCommit()) broadcast_pending_ = true;
}

bool Raft::MaybeSendAppend(uint64_t to, bool send_if_empty) {
  auto it = progress_.find(to);
  if (it == progress_.end() || to == id_) return false;
  Progress& pr = it->second;
  if (pr.IsPaused()) return false;
  pb::Message m;
  m.set_to(to);
  absl::StatusOr<uint64_t> prev_term = log_.Term(pr.next_index - 1);
  absl::StatusOr<std::vector<pb::Entry>> ents = log_.EntriesFrom(pr.next_index, max_size_per_msg_);
  if (ents.ok() && ents->empty() && !send_if_empty) return false;
  if (!prev_term.ok() || !ents.ok()) {
    // The entries the follower needs were compacted: send the snapshot instead.
    absl::StatusOr<pb::Snapshot> snap = log_.Snapshot();
    if (!snap.ok()) return false;  // not ready yet; retried on a later heartbeat response
    RAFT_CHECK(snap->metadata().index() != 0);
    m.set_type(pb::MSG_SNAPSHOT);
    *m.mutable_snapshot() = *std::move(snap);
    pr.BecomeSnapshot(m.snapshot().metadata().index());
  } else {
    m.set_type(pb::MSG_APPEND);
    m.set_index(pr.next_index - 1);
    m.set_log_term(*prev_term);
    m.set_commit(log_.committed());
    m.set_lease_tick(now_);
    for (pb::Entry& e : *ents) *m.add_entries() = std::move(e);
    if (!m.entries().empty()) {
      if (pr.state == ProgressState::kReplicate) {
        const uint64_t last = m.entries(m.entries_size() - 1).index();
        pr.OptimisticUpdate(last);
        pr.inflights.Add(last);
      } else if (pr.state == ProgressState::kProbe) {
        pr.probe_sent = true;
      }
    }
  }
  Send(std::move(m));
  return true;
}

void Raft::BroadcastAppend() {
  broadcast_pending_ = false;
  for (const auto& [id, pr] : progress_) {
    if (id != id_) SendAppend(id);
  }
}

void Raft::SendHeartbeat(uint64_t to, const std::string& context) {
  const Progress& pr = progress_.at(to);
  pb::Message m;
  m.set_to(to);
  m.set_type(pb::MSG_HEARTBEAT);
  // Never let a follower commit past what it is known to hold.
  m.set_commit(std::min(pr.match_index, log_.committed()));
  m.set_context(context);
  m.set_lease_tick(now_);
  Send(std::move(m));
}

void Raft::BroadcastHeartbeat(const std::string& context) {
  std::string ctx = context.empty() ? read_only_.LastPendingContext() : context;
  for (const auto& [id, pr] : progress_) {
    if (id != id_) SendHeartbeat(id, ctx);
  }
}

void Raft::SendTimeoutNow(uint64_t to) {
  pb::Message m;
  m.set_to(to);
  m.set_type(pb::MSG_TIMEOUT_NOW);
  Send(std::move(m));
}

bool Raft::MaybeCommit() {
  std::vector<uint64_t> matches;
  for (const auto& [id, pr] : progress_) {
    if (!pr.is_learner) matches.push_back(pr.match_index);
  }
  // Only an entry of the current term is committed by counting replicas (§5.4.2).
  if (!log_.MaybeCommit(MajorityCommitted(std::move(matches)), term_)) return false;
  OnCommitAdvanced();
  return true;
}

bool Raft::CommittedInCurrentTerm() const {
  absl::StatusOr<uint64_t> t = log_.Term(log_.committed());
  return t.ok() && *t == term_;
}

void Raft::OnCommitAdvanced() {
  if (pending_read_requests_.empty() || !CommittedInCurrentTerm()) return;
  std::vector<pb::Message> reads = std::move(pending_read_requests_);
  pending_read_requests_.clear();
  for (const pb::Message& m : reads) ServeReadIndex(m);
}

void Raft::ServeReadIndex(const pb::Message& m) {
  read_only_.Add(log_.committed(), m.from(), m.context());
  if (ReadQuorumReached(read_only_.RecvAck(id_, m.context()))) {
    for (const PendingRead& read : read_only_.Advance(m.context())) RespondToRead(read);
    return;
  }
  BroadcastHeartbeat(m.context());
}

bool Raft::ReadQuorumReached(const std::set<uint64_t>* acks) const {
  if (acks == nullptr) return false;
  // Only voters' acks confirm leadership: learners cannot elect anyone else.
  size_t voter_acks = 0, voters = 0;
  for (const auto& [id, pr] : progress_) {
    if (pr.is_learner) continue;
    ++voters;
    voter_acks += acks->contains(id);
  }
  return voters > 0 && voter_acks >= QuorumSize(voters);
}

void Raft::RespondToRead(const PendingRead& read) {
  if (read.from == id_ || read.from == kNoNode) {
    read_states_.push_back(ReadState{read.index, read.context});
    return;
  }
  pb::Message m;
  m.set_to(read.from);
  m.set_type(pb::MSG_READ_INDEX_RESPONSE);
  m.set_index(read.index);
  m.set_context(read.context);
  Send(std::move(m));
}

// --- local requests -----------------------------------------------------------------------------

absl::Status Raft::Propose(const std::vector<std::string>& data) {
  pb::Message m;
  m.set_type(pb::MSG_PROPOSE);
  m.set_from(id_);
  for (const std::string& d : data) m.add_entries()->set_data(d);
  return Step(std::move(m));
}

absl::Status Raft::ProposeConfChange(const pb::ConfChange& change) {
  pb::Message m;
  m.set_type(pb::MSG_PROPOSE);
  m.set_from(id_);
  pb::Entry* e = m.add_entries();
  e->set_type(pb::ENTRY_CONF_CHANGE);
  e->set_data(change.SerializeAsString());
  return Step(std::move(m));
}

absl::Status Raft::ReadIndex(const std::string& context) {
  if (context.empty()) return absl::InvalidArgumentError("raft: read context must not be empty");
  pb::Message m;
  m.set_type(pb::MSG_READ_INDEX);
  m.set_from(id_);
  m.set_context(context);
  return Step(std::move(m));
}

absl::Status Raft::TransferLeadership(uint64_t to) {
  if (role_ != Role::kLeader) return absl::FailedPreconditionError("raft: not the leader");
  if (to == id_) return absl::InvalidArgumentError("raft: already the leader");
  auto it = progress_.find(to);
  if (it == progress_.end() || it->second.is_learner) {
    return absl::InvalidArgumentError("raft: transfer target is not a voter");
  }
  if (lead_transferee_ == to) return absl::OkStatus();
  AbortLeaderTransfer();
  // The transfer must complete within one election timeout.
  election_elapsed_ = 0;
  lead_transferee_ = to;
  if (it->second.match_index == log_.LastIndex()) {
    SendTimeoutNow(to);
  } else {
    SendAppend(to);
  }
  return absl::OkStatus();
}

pb::ConfState Raft::ApplyConfChange(const pb::ConfChange& change) {
  pb::ConfState cs = conf_state();
  std::vector<uint64_t> voters(cs.voters().begin(), cs.voters().end());
  std::vector<uint64_t> learners(cs.learners().begin(), cs.learners().end());
  auto erase = [](std::vector<uint64_t>& v, uint64_t id) {
    v.erase(std::remove(v.begin(), v.end(), id), v.end());
  };
  auto contains = [](const std::vector<uint64_t>& v, uint64_t id) {
    return std::find(v.begin(), v.end(), id) != v.end();
  };
  const uint64_t node = change.node_id();
  switch (change.type()) {
    case pb::CONF_ADD_VOTER:
    case pb::CONF_PROMOTE_LEARNER:
      erase(learners, node);
      if (!contains(voters, node)) voters.push_back(node);
      break;
    case pb::CONF_ADD_LEARNER:
      // Demoting a voter needs joint consensus; a single-step change only adds new learners.
      if (!contains(voters, node) && !contains(learners, node)) learners.push_back(node);
      break;
    case pb::CONF_REMOVE_NODE:
      erase(voters, node);
      erase(learners, node);
      break;
    default:
      break;
  }
  pb::ConfState next;
  for (uint64_t v : voters) next.add_voters(v);
  for (uint64_t l : learners) next.add_learners(l);
  SetMembership(next);
  if (role_ == Role::kLeader) {
    if (!IsVoter(id_)) {
      // A leader removed from the voters steps down; the rest elect a new leader.
      BecomeFollower(term_, kNoNode);
    } else {
      if (lead_transferee_ != kNoNode && !IsVoter(lead_transferee_)) AbortLeaderTransfer();
      // A smaller voter set may commit more; new peers need their first append.
      if (MaybeCommit())
        BroadcastAppend();
      else
        broadcast_pending_ = true;
    }
  }
  return conf_state();
}

void Raft::ReportSnapshot(uint64_t to, bool success) {
  if (role_ != Role::kLeader) return;
  auto it = progress_.find(to);
  if (it == progress_.end() || it->second.state != ProgressState::kSnapshot) return;
  Progress& pr = it->second;
  // On failure, restart from what is known; on success, the follower's ack moves it forward.
  if (!success) pr.pending_snapshot = 0;
  pr.BecomeProbe();
  // Wait for the next heartbeat response before probing again.
  pr.probe_sent = true;
}

void Raft::OnApplied(uint64_t applied_index) { log_.AppliedTo(applied_index); }

std::vector<pb::Message> Raft::TakeMessages() {
  if (broadcast_pending_ && role_ == Role::kLeader) BroadcastAppend();
  broadcast_pending_ = false;
  return std::exchange(msgs_, {});
}

std::vector<ReadState> Raft::TakeReadStates() { return std::exchange(read_states_, {}); }

}  // namespace leasehold::raft
