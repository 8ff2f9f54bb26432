#include "server/member/node_loop.h"

#include <chrono>
#include <cstdlib>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/etcd_errors.h"
#include "server/member/reconfig_checks.h"
#include "server/observability/log.h"
#include "server/observability/metrics.h"

namespace leasehold::server {
namespace {

// Wall-clock time, which lease deadlines are kept in.
int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Hex(uint64_t id) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%llx", static_cast<unsigned long long>(id));
  return buffer;
}

// A failed write of the Raft log leaves this member unable to keep its promises (a vote, an
// acknowledged append): stop rather than go on with memory and disk apart.
void WriteOrDie(storage::Engine* engine, rocksdb::WriteBatch* batch, bool sync) {
  const auto start = std::chrono::steady_clock::now();
  absl::Status st = engine->Write(batch, sync);
  if (sync) {
    Metrics::Get().ObserveWalFsync(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (!st.ok()) {
    LogError("raft log write failed; stopping", {{"error", st.ToString()}});
    std::abort();
  }
}

}  // namespace

NodeLoop::NodeLoop(storage::Engine* engine, storage::StateMachine* state_machine,
                   storage::RaftLogStore* log_store, MessageSender* sender, Options options,
                   ApplyObserver observer)
    : engine_(engine),
      state_machine_(state_machine),
      log_store_(log_store),
      sender_(sender),
      options_(std::move(options)),
      observer_(std::move(observer)),
      next_read_context_(absl::Uniform<uint64_t>(absl::BitGen())) {}

absl::Status NodeLoop::Bootstrap() {
  // Every founding member writes the same first entries: one membership change per member, in id
  // order, at term 1, already committed. A member that joins later receives them from the leader,
  // so all members' logs agree from index 1.
  std::vector<raftpb::Entry> entries;
  uint64_t index = 0;
  for (const auto& member : options_.bootstrap_members) {
    raftpb::ConfChange change;
    change.set_type(member.is_learner() ? raftpb::CONF_ADD_LEARNER : raftpb::CONF_ADD_VOTER);
    change.set_node_id(member.id());
    change.set_context(member.SerializeAsString());
    raftpb::Entry& entry = entries.emplace_back();
    entry.set_term(1);
    entry.set_index(++index);
    entry.set_type(raftpb::ENTRY_CONF_CHANGE);
    entry.set_data(change.SerializeAsString());
  }
  raftpb::HardState hard_state;
  hard_state.set_term(1);
  hard_state.set_commit(index);
  rocksdb::WriteBatch batch;
  log_store_->Append(entries, &batch);
  log_store_->SetHardState(hard_state, &batch);
  return engine_->Write(&batch, /*sync=*/true);
}

absl::Status NodeLoop::Start() {
  if (log_store_->empty()) {
    if (state_machine_->applied_index() > 0) {
      return absl::FailedPreconditionError("data dir has applied state but no Raft log");
    }
    if (!options_.bootstrap_members.empty()) {
      if (absl::Status st = Bootstrap(); !st.ok()) return st;
    }
  }
  log_store_->set_snapshot_source([this] { return MakeSnapshot(); });
  raft::Config config;
  config.id = options_.id;
  config.election_ticks = options_.election_ticks;
  config.heartbeat_ticks = 1;
  config.storage = log_store_;
  for (const auto& member : options_.bootstrap_members) {
    if (!member.is_learner()) config.peers.push_back(member.id());
  }
  config.applied = state_machine_->applied_index();
  config.check_quorum = true;
  config.pre_vote = options_.pre_vote;
  config.forward_proposals = true;
  config.max_size_per_msg = 1 << 20;
  config.max_inflight_msgs = 256;
  // Election jitter differs per member and per start; nothing replicated depends on it.
  config.random_seed = options_.id ^ static_cast<uint64_t>(SteadyMs());
  auto node = raft::Node::Create(config);
  if (!node.ok()) return node.status();
  node_ = std::move(*node);
  term_ = node_->raft().term();
  committed_ = node_->raft().log().committed();
  // A lone voter need not wait an election timeout to lead itself.
  auto sole_voter = [this] {
    const raftpb::ConfState cs = node_->raft().conf_state();
    return cs.voters_size() == 1 && cs.voters(0) == options_.id;
  };
  if (sole_voter() || options_.replay_before_start) {
    // The bootstrap membership must be applied before campaigning; the first Ready does that (a
    // long committed backlog may take several).
    ProcessReady(SteadyMs());
    while (options_.replay_before_start && !sole_voter() &&
           state_machine_->applied_index() < node_->raft().log().committed()) {
      const uint64_t before = state_machine_->applied_index();
      ProcessReady(SteadyMs());
      if (state_machine_->applied_index() == before) break;
    }
    if (sole_voter()) {
      if (absl::Status st = node_->Campaign(); !st.ok())
        LogWarn("campaign failed", {{"error", st.ToString()}});
    }
  }
  started_ = true;
  responder_ = std::thread([this] { Respond(); });
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void NodeLoop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  // Whatever still waits is answered "server stopped", after everything already applied.
  AppliedGroup last;
  for (auto& [id, w] : waiters_)
    last.completions.emplace_back(std::move(w.done),
                                  storage::ApplyResult::Error(errors::Stopped()));
  for (auto& [id, w] : conf_waiters_)
    last.status_completions.emplace_back(std::move(w.done), errors::Stopped());
  for (auto& [ctx, asked] : read_waiters_) {
    for (auto& w : asked.waiters)
      last.status_completions.emplace_back(std::move(w.done), errors::Stopped());
  }
  for (auto& [index, w] : reads_to_serve_)
    last.status_completions.emplace_back(std::move(w.done), errors::Stopped());
  for (auto& [to, w] : transfers_)
    last.status_completions.emplace_back(std::move(w.done), errors::Stopped());
  transfers_.clear();
  waiters_.clear();
  conf_waiters_.clear();
  read_waiters_.clear();
  reads_to_serve_.clear();
  Inbox left;
  {
    absl::MutexLock lock(&mu_);
    std::swap(left, inbox_);
  }
  TakeHeld(left, &last);  // what waited for a leader is answered with the rest
  for (auto& p : left.proposals)
    last.completions.emplace_back(std::move(p.done),
                                  storage::ApplyResult::Error(errors::Stopped()));
  for (auto& c : left.conf_changes)
    last.status_completions.emplace_back(std::move(c.done), errors::Stopped());
  for (auto& r : left.reads)
    last.status_completions.emplace_back(std::move(r.done), errors::Stopped());
  for (auto& t : left.transfers)
    last.status_completions.emplace_back(std::move(t.second), errors::Stopped());
  if (started_) {
    Hand(std::move(last));
    {
      absl::MutexLock lock(&respond_mu_);
      respond_stopping_ = true;
    }
    if (responder_.joinable()) responder_.join();
  } else {
    for (auto& [done, result] : last.completions) done(std::move(result));
    for (auto& [done, status] : last.status_completions) done(status);
  }
}

void NodeLoop::Propose(internalpb::InternalRequest entry, Done done, Abandoned abandoned) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      inbox_.proposals.push_back({std::move(entry), std::move(done), std::move(abandoned)});
      return;
    }
  }
  done(storage::ApplyResult::Error(errors::Stopped()));
}

void NodeLoop::ProposeConfChange(raftpb::ConfChange change, StatusDone done) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      inbox_.conf_changes.push_back({std::move(change), std::move(done)});
      return;
    }
  }
  done(errors::Stopped());
}

void NodeLoop::ReadBarrier(StatusDone done) {
  // A sole member answers a write, and publishes its events, only after applying it, so its applied
  // state holds every write anyone has seen: serve at once rather than wait a loop round, which may
  // be busy syncing the next batch. Entries in its log from before it led (acknowledged by an
  // earlier leader, or before a restart) must be applied first: hence the floor.
  if (sole_member_leader_.load(std::memory_order_acquire) &&
      state_machine_->applied_index() >= sole_member_read_floor_.load(std::memory_order_acquire)) {
    return done(absl::OkStatus());
  }
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      inbox_.reads.push_back({std::move(done)});
      return;
    }
  }
  done(errors::Stopped());
}

void NodeLoop::TransferLeadership(uint64_t to, StatusDone done) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      inbox_.transfers.emplace_back(to, std::move(done));
      return;
    }
  }
  done(errors::Stopped());
}

void NodeLoop::AdvanceTicks(int ticks) {
  absl::MutexLock lock(&mu_);
  if (!stopping_) inbox_.advance_ticks += ticks;
}

void NodeLoop::Receive(std::vector<raftpb::Message> messages) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  if (inbox_.messages.empty()) {
    inbox_.messages = std::move(messages);
  } else {
    for (auto& m : messages) inbox_.messages.push_back(std::move(m));
  }
}

void NodeLoop::ReportSnapshot(uint64_t to, bool delivered) {
  absl::MutexLock lock(&mu_);
  if (!stopping_) inbox_.snapshot_reports.emplace_back(to, delivered);
}

void NodeLoop::Run() {
  int64_t next_tick = SteadyMs() + options_.tick_ms;
  int64_t next_sweep = SteadyMs() + 100;
  Inbox inbox;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      const absl::Time deadline =
          absl::Now() + absl::Milliseconds(std::max<int64_t>(0, next_tick - SteadyMs()));
      mu_.AwaitWithDeadline(absl::Condition(
                                +[](NodeLoop* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                  return self->stopping_ || !self->inbox_.empty();
                                },
                                this),
                            deadline);
      if (stopping_) return;
      std::swap(inbox, inbox_);
    }
    int64_t now = SteadyMs();
    if (now >= next_tick) {
      // Ticks missed while busy are made up, but not beyond one election timeout's worth.
      int ticks = static_cast<int>(
          std::min<int64_t>((now - next_tick) / options_.tick_ms + 1, options_.election_ticks));
      for (int i = 0; i < ticks; ++i) node_->Tick();
      next_tick = now + options_.tick_ms;
    }
    HandleInbox(inbox, now);
    inbox = Inbox();
    ProcessReady(now);
    if (!transfers_.empty()) {
      AppliedGroup moved;
      FinishTransfers(&moved);
      if (!moved.status_completions.empty()) Hand(std::move(moved));
    }
    if (now >= next_sweep) {
      AppliedGroup expired;
      ExpireWaiters(now, &expired);
      if (!expired.completions.empty() || !expired.status_completions.empty())
        Hand(std::move(expired));
      RetryReadIndexes(now);
      MaybePublish(now);
      next_sweep = now + 100;
    }
    lease_valid_.store(node_->LeaseValid(), std::memory_order_relaxed);
    pending_proposals_.store(static_cast<int64_t>(waiters_.size() + held_.proposals.size()),
                             std::memory_order_relaxed);
    const bool sole_member_leader = node_->SoleMemberLeader();
    if (sole_member_leader && !sole_member_leader_.load(std::memory_order_relaxed)) {
      sole_member_read_floor_.store(node_->raft().log().LastIndex(), std::memory_order_release);
    }
    sole_member_leader_.store(sole_member_leader, std::memory_order_release);
    lease_checked_ms_.store(SteadyMs(), std::memory_order_relaxed);
  }
}

bool NodeLoop::lease_valid() const {
  return lease_valid_.load(std::memory_order_relaxed) &&
         SteadyMs() - lease_checked_ms_.load(std::memory_order_relaxed) <= 2 * options_.tick_ms;
}

absl::Status NodeLoop::LearnerInSync(const raftpb::ConfChange& change) const {
  if (change.type() != raftpb::CONF_PROMOTE_LEARNER) return absl::OkStatus();
  const auto& progress = node_->raft().progress();
  auto learner = progress.find(change.node_id());
  auto self = progress.find(options_.id);
  if (learner == progress.end() || self == progress.end())
    return absl::OkStatus();  // the table decides
  // etcd's measure: within 10% of the leader's own log.
  if (static_cast<double>(learner->second.match_index) <
      0.9 * static_cast<double>(self->second.match_index)) {
    return errors::LearnerNotReady();
  }
  return absl::OkStatus();
}

absl::Status NodeLoop::LeaderDecides(const raftpb::ConfChange& change, int64_t now_ms) const {
  const raft::Raft& raft = node_->raft();
  if (raft.lead() == raft::kNoNode) return absl::OkStatus();  // held until a leader is known
  // Lost the lead since the change was taken: Raft would forward it past the new leader's checks.
  // Nothing reached a log, so the caller may take it to the new leader (LeaderRouter retries).
  if (raft.lead() != options_.id) return errors::NoLeader();
  if (!options_.strict_reconfig_check)
    return LearnerInSync(change);  // as etcd's, which checks this always
  VoterHealth health;
  for (const auto& [id, progress] : raft.progress()) {
    if (progress.is_learner) continue;
    ++health.voters;
    if (raft.PeerActive(id)) ++health.active;
  }
  // A new leader (or one whose loop stalled) has not yet heard from every live voter, and would
  // take one for silent: ask again once it surely has (LeaderRouter retries "no leader").
  if (health.voters > 1 && (!raft.LeaseValid() || now_ms - leading_since_ms_ <
                                                      options_.tick_ms * options_.election_ticks)) {
    return errors::NoLeader();
  }
  if (absl::Status st = LearnerInSync(change); !st.ok()) return st;
  auto target = raft.progress().find(change.node_id());
  const bool voter = target != raft.progress().end() && !target->second.is_learner;
  MembershipChange kind = MembershipChange::kPromote;
  switch (change.type()) {
    case raftpb::CONF_ADD_VOTER:
      kind = MembershipChange::kAddVoter;
      break;
    case raftpb::CONF_ADD_LEARNER:
      kind = MembershipChange::kAddLearner;
      break;
    case raftpb::CONF_REMOVE_NODE:
      kind = voter ? MembershipChange::kRemoveVoter : MembershipChange::kRemoveLearner;
      break;
    default:
      break;
  }
  return HealthAllowsChange(kind, raft.PeerActive(change.node_id()), health);
}

void NodeLoop::HandleInbox(Inbox& inbox, int64_t now_ms) {
  for (const raftpb::Message& m : inbox.messages) {
    // Errors here are messages the node refuses (stale, malformed): nothing to answer.
    node_->Step(m).IgnoreError();
  }
  for (const auto& [to, delivered] : inbox.snapshot_reports) node_->ReportSnapshot(to, delivered);
  if (node_->raft().lead() == raft::kNoNode) {
    for (int i = 0; i < inbox.advance_ticks; ++i) node_->Tick();
  }
  const int64_t deadline = now_ms + options_.request_timeout_ms;
  for (auto& p : inbox.proposals) p.deadline_ms = p.deadline_ms != 0 ? p.deadline_ms : deadline;
  for (auto& c : inbox.conf_changes) c.deadline_ms = c.deadline_ms != 0 ? c.deadline_ms : deadline;
  for (auto& r : inbox.reads) r.deadline_ms = r.deadline_ms != 0 ? r.deadline_ms : deadline;
  const bool leaderless = node_->raft().lead() == raft::kNoNode;
  AppliedGroup failed;
  if (!leaderless) TakeHeld(inbox, &failed);
  for (auto& [to, done] : inbox.transfers) {
    if (to == options_.id && node_->raft().lead() == options_.id) {
      failed.status_completions.emplace_back(std::move(done), absl::OkStatus());  // already there
      continue;
    }
    absl::Status st = node_->TransferLeadership(to);
    if (st.ok()) {
      transfers_.emplace(to, StatusWaiter{std::move(done), deadline});
    } else {
      failed.status_completions.emplace_back(std::move(done), absl::IsFailedPrecondition(st)
                                                                  ? errors::NotLeader()
                                                                  : errors::BadLeaderTransferee());
    }
  }
  // A caller that gave up (its client cancelled, or its deadline passed) while its proposal waited
  // in the inbox gets no late write: the client may already have sent it again elsewhere.
  std::erase_if(inbox.proposals, [&failed](PendingProposal& p) {
    if (!p.abandoned || !p.abandoned()) return false;
    failed.completions.emplace_back(std::move(p.done),
                                    storage::ApplyResult::Error(errors::RequestCancelled()));
    return true;
  });
  if (!inbox.proposals.empty()) {
    std::vector<std::string> data;
    data.reserve(inbox.proposals.size());
    for (const auto& p : inbox.proposals) data.push_back(p.entry.SerializeAsString());
    absl::Status st = node_->ProposeBatch(data);
    for (size_t i = 0; i < inbox.proposals.size(); ++i) {
      PendingProposal& p = inbox.proposals[i];
      if (st.ok()) {
        // Raft forwards to the leader it knows now (messages of this round included), not to the
        // one leader_ last recorded.
        const uint64_t lead = node_->raft().lead();
        waiters_[p.entry.id()] =
            Waiter{std::move(p.done), p.deadline_ms, lead == options_.id ? 0 : lead};
      } else if (leaderless && RoomToHold(data[i].size())) {
        held_bytes_ += data[i].size();
        held_.proposals.push_back(std::move(p));
      } else {
        failed.completions.emplace_back(std::move(p.done),
                                        storage::ApplyResult::Error(errors::NoLeader()));
      }
    }
  }
  for (auto& c : inbox.conf_changes) {
    if (absl::Status allowed = LeaderDecides(c.change, now_ms); !allowed.ok()) {
      failed.status_completions.emplace_back(std::move(c.done), allowed);
      continue;
    }
    // The waiter is found again by the change id in the context, which the member's own handlers
    // wrote: one without it could never be answered, so it is refused rather than proposed.
    internalpb::MemberRecord context;
    if (!context.ParseFromString(c.change.context()) || context.change_id() == 0) {
      failed.status_completions.emplace_back(
          std::move(c.done), absl::InternalError("membership change without a change id"));
      continue;
    }
    absl::Status st = node_->ProposeConfChange(c.change);
    if (st.ok()) {
      conf_waiters_[context.change_id()] = StatusWaiter{std::move(c.done), c.deadline_ms};
    } else if (leaderless && RoomToHold(0)) {
      held_.conf_changes.push_back(std::move(c));
    } else {
      failed.status_completions.emplace_back(std::move(c.done), absl::IsFailedPrecondition(st)
                                                                    ? errors::Unhealthy()
                                                                    : errors::NoLeader());
    }
  }
  AskReadIndex(inbox.reads, leaderless, now_ms, &failed);
  if (!failed.completions.empty() || !failed.status_completions.empty()) Hand(std::move(failed));
}

void NodeLoop::AskReadIndex(std::vector<PendingRead>& reads, bool leaderless, int64_t now_ms,
                            AppliedGroup* failed) {
  if (reads.empty()) return;
  // The leader keeps every member's pending reads by context, and ignores a context it already
  // holds: it must be unique across the cluster (this member's id), and across this member's
  // restarts (a sequence starting from a random number).
  std::string context(16, '\0');
  const uint64_t seq = ++next_read_context_;
  for (int i = 0; i < 8; ++i) {
    context[i] = static_cast<char>(options_.id >> (8 * i));
    context[8 + i] = static_cast<char>(seq >> (8 * i));
  }
  const absl::Status st = node_->ReadIndex(context);
  AskedReads asked{{}, now_ms};
  for (auto& r : reads) {
    if (st.ok()) {
      asked.waiters.push_back(StatusWaiter{std::move(r.done), r.deadline_ms, node_->raft().lead()});
    } else if (leaderless && RoomToHold(0)) {
      held_.reads.push_back(std::move(r));
    } else {
      failed->status_completions.emplace_back(std::move(r.done), errors::NoLeader());
    }
  }
  if (!asked.waiters.empty()) read_waiters_.emplace(std::move(context), std::move(asked));
}

void NodeLoop::RetryReadIndexes(int64_t now_ms) {
  std::vector<PendingRead> again;
  for (auto it = read_waiters_.begin(); it != read_waiters_.end();) {
    if (now_ms - it->second.asked_ms < kReadIndexRetryMs) {
      ++it;
      continue;
    }
    for (auto& w : it->second.waiters)
      again.push_back(PendingRead{std::move(w.done), w.deadline_ms});
    it = read_waiters_.erase(it);
    Metrics::Get().CountSlowReadIndex();
  }
  AppliedGroup failed;
  AskReadIndex(again, node_->raft().lead() == raft::kNoNode, now_ms, &failed);
  if (!failed.status_completions.empty()) Hand(std::move(failed));
}

bool NodeLoop::RoomToHold(size_t bytes) const {
  const size_t held = held_.proposals.size() + held_.conf_changes.size() + held_.reads.size();
  return held < kMaxHeldRequests && held_bytes_ + bytes <= kMaxHeldBytes;
}

void NodeLoop::TakeHeld(Inbox& inbox, AppliedGroup* dropped) {
  if (held_.proposals.empty() && held_.conf_changes.empty() && held_.reads.empty()) return;
  // Callers that gave up while their proposals were held get no late write.
  DropHeldProposals(/*now_ms=*/0, dropped);
  held_bytes_ = 0;
  auto ahead = [](auto& held, auto& incoming) {
    for (auto& x : incoming) held.push_back(std::move(x));
    incoming = std::move(held);
    held.clear();
  };
  ahead(held_.proposals, inbox.proposals);
  ahead(held_.conf_changes, inbox.conf_changes);
  ahead(held_.reads, inbox.reads);
}

void NodeLoop::DropHeldProposals(int64_t now_ms, AppliedGroup* group) {
  // etcd says "request timed out" for an expired one; "no leader" says more: nothing reached a log,
  // so a client may safely send a write again elsewhere (the code, UNAVAILABLE, is the same).
  std::erase_if(held_.proposals, [&](PendingProposal& p) {
    const bool abandoned = p.abandoned && p.abandoned();
    if (!abandoned && p.deadline_ms > now_ms) return false;
    held_bytes_ -= p.entry.GetCachedSize();  // sized when serialized
    group->completions.emplace_back(
        std::move(p.done),
        storage::ApplyResult::Error(abandoned ? errors::RequestCancelled() : errors::NoLeader()));
    return true;
  });
}

void NodeLoop::ExpireHeld(int64_t now_ms, AppliedGroup* group) {
  auto expire = [now_ms](auto& held, auto time_out) {
    std::erase_if(held, [&](auto& x) {
      if (x.deadline_ms > now_ms) return false;
      time_out(x.done);
      return true;
    });
  };
  DropHeldProposals(now_ms, group);
  auto status_time_out = [group](StatusDone& done) {
    group->status_completions.emplace_back(std::move(done), errors::NoLeader());
  };
  expire(held_.conf_changes, status_time_out);
  expire(held_.reads, status_time_out);
}

void NodeLoop::ProcessReady(int64_t now_ms) {
  while (node_->HasReady()) {
    raft::Ready rd = node_->GetReady();
    if (rd.soft_state) OnSoftState(*rd.soft_state);
    rocksdb::WriteBatch batch;
    bool sync = !rd.entries.empty() || rd.snapshot.has_value();
    if (rd.snapshot) InstallSnapshot(*rd.snapshot, &batch);
    log_store_->Append(rd.entries, &batch);
    if (rd.hard_state) {
      const raftpb::HardState& previous = log_store_->hard_state();
      // A vote or a new term must be durable before any message reflects it; a commit index need
      // not.
      sync = sync || rd.hard_state->term() != previous.term() ||
             rd.hard_state->vote() != previous.vote();
      log_store_->SetHardState(*rd.hard_state, &batch);
      term_.store(rd.hard_state->term(), std::memory_order_relaxed);
      committed_.store(rd.hard_state->commit(), std::memory_order_relaxed);
    }
    // A leader's appends go out before its own write, so the followers' syncs run alongside it
    // (etcd does the same). Commitment needs their replies, which this loop steps only after the
    // write below has returned.
    if (rd.may_send_before_persisting && !rd.messages.empty()) SendReadyMessages(&rd);
    if (batch.Count() > 0) WriteOrDie(engine_, &batch, sync);
    if (snapshot_installed_) {
      snapshot_installed_ = false;
      if (absl::Status st = state_machine_->ReloadFromEngine(); !st.ok()) {
        LogError("cannot load the installed snapshot; stopping", {{"error", st.ToString()}});
        std::abort();
      }
      LogInfo("installed a snapshot from the leader",
              {{"index", std::to_string(rd.snapshot->metadata().index())},
               {"revision", std::to_string(state_machine_->revision())}});
    }
    if (!rd.messages.empty()) SendReadyMessages(&rd);

    AppliedGroup group;
    if (rd.snapshot) {
      // Watchers catch up from the installed history before this Ready's entries are published.
      AppliedGroup resync;
      resync.resync = true;
      resync.revision = state_machine_->revision();
      Hand(std::move(resync));
    }
    if (!rd.committed_entries.empty()) ApplyCommitted(rd.committed_entries, &group);
    for (const raft::ReadState& rs : rd.read_states) {
      auto it = read_waiters_.find(rs.context);
      if (it == read_waiters_.end()) continue;
      for (auto& w : it->second.waiters) reads_to_serve_.emplace(rs.index, std::move(w));
      read_waiters_.erase(it);
    }
    const uint64_t applied = state_machine_->applied_index();
    while (!reads_to_serve_.empty() && reads_to_serve_.begin()->first <= applied) {
      group.status_completions.emplace_back(std::move(reads_to_serve_.begin()->second.done),
                                            absl::OkStatus());
      reads_to_serve_.erase(reads_to_serve_.begin());
    }
    if (new_leader_ != 0) {
      // A new leader is known: proposals forwarded to an earlier one may have died with it. Their
      // outcome is unknown (the new leader may still commit one the old leader replicated): say so
      // now, as etcd's "leader changed", rather than after the whole request timeout, so clients
      // can retry against the new leader at once.
      const uint64_t leader = new_leader_;
      new_leader_ = 0;
      for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (it->second.forwarded_to == 0 || it->second.forwarded_to == leader) {
          ++it;
          continue;
        }
        group.completions.emplace_back(std::move(it->second.done),
                                       storage::ApplyResult::Error(errors::LeaderChanged()));
        it = waiters_.erase(it);
      }
      // Read barriers still waiting for a read index asked of an earlier leader will not get one:
      // etcd answers those with "leader changed" too.
      for (auto it = read_waiters_.begin(); it != read_waiters_.end();) {
        auto& list = it->second.waiters;
        for (auto w = list.begin(); w != list.end();) {
          if (w->asked == leader) {
            ++w;
            continue;
          }
          group.status_completions.emplace_back(std::move(w->done), errors::LeaderChanged());
          w = list.erase(w);
        }
        it = list.empty() ? read_waiters_.erase(it) : std::next(it);
      }
    }
    if (!group.completions.empty() || !group.status_completions.empty() || !group.events.empty() ||
        group.revision != 0) {
      Hand(std::move(group));
    }
    node_->Advance(rd);
    MaybeCompact();
  }
}

void NodeLoop::SendReadyMessages(raft::Ready* rd) {
  // Someone else is now in the configuration and may apply what this member has not yet: reads
  // take the ReadIndex path from here on (see ReadBarrier).
  sole_member_leader_.store(false, std::memory_order_release);
  sender_->Send(std::move(rd->messages));
  rd->messages.clear();
}

void NodeLoop::ApplyCommitted(const std::vector<raftpb::Entry>& entries, AppliedGroup* group) {
  bool promote = false;
  for (const raftpb::Entry& e : entries) {
    if (e.index() <= state_machine_->applied_index()) continue;  // applied before a restart
    if (e.type() == raftpb::ENTRY_CONF_CHANGE) {
      raftpb::ConfChange change;
      if (!change.ParseFromString(e.data())) {
        LogError("malformed membership change in the log", {{"index", std::to_string(e.index())}});
        std::abort();
      }
      const raftpb::ConfState cs = node_->ApplyConfChange(change);
      state_machine_->ApplyConfChange(e.index(), change, cs);
      LogInfo("membership changed", {{"change", raftpb::ConfChangeType_Name(change.type())},
                                     {"member", Hex(change.node_id())},
                                     {"index", std::to_string(e.index())}});
      if (change.type() == raftpb::CONF_REMOVE_NODE && change.node_id() == options_.id &&
          options_.on_removed) {
        options_.on_removed();
      }
      // A change proposed elsewhere (or by an older version) may carry no readable context: no
      // waiter here then.
      internalpb::MemberRecord context;
      const bool readable = context.ParseFromString(change.context());
      if (auto it = conf_waiters_.find(context.change_id());
          readable && context.change_id() != 0 && it != conf_waiters_.end()) {
        group->status_completions.emplace_back(std::move(it->second.done), absl::OkStatus());
        conf_waiters_.erase(it);
      }
      continue;
    }
    internalpb::InternalRequest request;
    if (!e.data().empty() && !request.ParseFromString(e.data())) {
      LogError("malformed entry in the log", {{"index", std::to_string(e.index())}});
      std::abort();
    }
    if (request.leader_term() != 0 && request.leader_term() != e.term()) {
      // A deposed leader's lease decision, forwarded to its successor: dropped by every member
      // (see InternalRequest.leader_term). The entry still takes its index.
      LogWarn("dropped a deposed leader's lease decision",
              {{"decided-in-term", std::to_string(request.leader_term())},
               {"logged-in-term", std::to_string(e.term())}});
      const uint64_t id = request.id();
      request.Clear();
      request.set_id(id);
      storage::ApplyResult dropped = state_machine_->Apply(e.index(), request);
      dropped.status = absl::FailedPreconditionError("lease decision of a deposed leader dropped");
      if (auto it = waiters_.find(id); id != 0 && it != waiters_.end()) {
        group->completions.emplace_back(std::move(it->second.done), std::move(dropped));
        waiters_.erase(it);
      }
      continue;
    }
    // Timed here, outside the state machine, which never reads a clock.
    const auto apply_started = std::chrono::steady_clock::now();
    storage::ApplyResult result = state_machine_->Apply(e.index(), request);
    WarnIfSlow(request, std::chrono::steady_clock::now() - apply_started);
    if (result.status.ok() && request.auth().has_authenticate() && options_.on_token_granted) {
      options_.on_token_granted(request.auth().authenticate());
    }
    for (auto& event : result.events) group->events.push_back(std::move(event));
    if (request.id() != 0) {
      if (auto it = waiters_.find(request.id()); it != waiters_.end()) {
        group->completions.emplace_back(std::move(it->second.done), std::move(result));
        waiters_.erase(it);
      }
    }
    if (promote_pending_ && e.term() == node_->raft().term()) promote = true;
  }
  const auto flush_start = std::chrono::steady_clock::now();
  state_machine_->FlushApplied();
  Metrics::Get().ObserveBackendCommit(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - flush_start).count());
  group->revision = state_machine_->revision();
  if (promote && node_->raft().role() == raft::Role::kLeader) {
    promote_pending_ = false;
    state_machine_->leases().Promote(options_.promote_allowance_ms, UnixMs());
    leading_term_.store(node_->raft().term(), std::memory_order_relaxed);
    LogInfo("leading: lease expiry tracked here",
            {{"term", std::to_string(node_->raft().term())},
             {"leases", std::to_string(state_machine_->leases().size())}});
  }
}

void NodeLoop::WarnIfSlow(const internalpb::InternalRequest& request,
                          std::chrono::steady_clock::duration took) const {
  const absl::Duration expected = absl::Microseconds(options_.warning_apply_duration_us);
  if (absl::FromChrono(took) <= expected) return;
  // What was applied, without values (as etcd shows a put's value_size, not its value).
  std::string what;
  switch (request.request_case()) {
    case internalpb::InternalRequest::kPut:
      what = absl::StrCat("put:<key:\"", absl::CHexEscape(request.put().key()),
                          "\" value_size:", request.put().value().size(), ">");
      break;
    case internalpb::InternalRequest::kDeleteRange:
      what = absl::StrCat("delete_range:<key:\"", absl::CHexEscape(request.delete_range().key()),
                          "\" range_end:\"", absl::CHexEscape(request.delete_range().range_end()),
                          "\">");
      break;
    case internalpb::InternalRequest::kTxn:
      what = absl::StrCat("txn:<compare:", request.txn().compare_size(),
                          " success:", request.txn().success_size(),
                          " failure:", request.txn().failure_size(), ">");
      break;
    case internalpb::InternalRequest::REQUEST_NOT_SET:
      what = "empty";
      break;
    default:
      what = request.GetDescriptor()
                 ->FindFieldByNumber(static_cast<int>(request.request_case()))
                 ->name();
  }
  LogWarn("apply request took too long", {{"took", GoDuration(absl::FromChrono(took))},
                                          {"expected-duration", GoDuration(expected)},
                                          {"prefix", ""},
                                          {"request", what}});
}

void NodeLoop::InstallSnapshot(const raftpb::Snapshot& snapshot, rocksdb::WriteBatch* batch) {
  if (absl::Status st =
          state_machine_->PrepareInstall(snapshot.data(), snapshot.metadata().index(), batch);
      !st.ok()) {
    LogError("received an unreadable snapshot; stopping", {{"error", st.ToString()}});
    std::abort();
  }
  log_store_->ApplySnapshot(snapshot.metadata(), batch);
  snapshot_installed_ = true;
}

absl::StatusOr<raftpb::Snapshot> NodeLoop::MakeSnapshot() {
  // Called by Raft on this thread while it prepares messages: the state machine is flushed and at
  // rest, so its dump is exactly the state as of its applied index.
  raftpb::Snapshot snapshot;
  const uint64_t applied = state_machine_->applied_index();
  auto term = log_store_->Term(applied);
  if (!term.ok()) return term.status();
  snapshot.mutable_metadata()->set_index(applied);
  snapshot.mutable_metadata()->set_term(*term);
  *snapshot.mutable_metadata()->mutable_conf_state() = node_->raft().conf_state();
  if (absl::Status st = state_machine_->Dump(snapshot.mutable_data()); !st.ok()) return st;
  LogInfo("sending a snapshot to a lagging member",
          {{"index", std::to_string(applied)}, {"bytes", std::to_string(snapshot.data().size())}});
  return snapshot;
}

void NodeLoop::MaybeCompact() {
  const uint64_t applied = state_machine_->applied_index();
  if (applied < log_store_->FirstIndex() + options_.snapshot_count + options_.catch_up_entries)
    return;
  rocksdb::WriteBatch batch;
  log_store_->Compact(applied - options_.catch_up_entries, &batch);
  // Unsynced is enough: the engine's log keeps writes in order, so the state flushed before this
  // survives whenever this does.
  WriteOrDie(engine_, &batch, /*sync=*/false);
  LogInfo("compacted the raft log",
          {{"up-to", std::to_string(applied - options_.catch_up_entries)}});
}

void NodeLoop::OnSoftState(const raft::SoftState& soft) {
  const uint64_t previous = leader_.exchange(soft.lead, std::memory_order_relaxed);
  const bool leading = soft.role == raft::Role::kLeader;
  if (leading && previous != options_.id) {
    promote_pending_ = true;
    leading_since_ms_ = SteadyMs();
  }
  if (!leading && state_machine_->leases().is_primary()) {
    leading_term_.store(0, std::memory_order_relaxed);
    state_machine_->leases().Demote();
    promote_pending_ = false;
  }
  if (!leading) promote_pending_ = false;
  if (soft.lead != 0 && previous != soft.lead) new_leader_ = soft.lead;
  if (previous != soft.lead) {
    if (soft.lead != 0) Metrics::Get().CountLeaderChange();
    LogInfo("leader changed",
            {{"leader", Hex(soft.lead)}, {"term", std::to_string(node_->raft().term())}});
  }
}

void NodeLoop::MaybePublish(int64_t now_ms) {
  if (published_ || leader_id() == 0) return;
  auto stored = state_machine_->members().Find(options_.id);
  if (!stored) return;  // not (yet) a member as far as the applied log says
  if (stored->name() == options_.self.name() &&
      std::equal(stored->client_urls().begin(), stored->client_urls().end(),
                 options_.self.client_urls().begin(), options_.self.client_urls().end())) {
    published_ = true;
    if (options_.on_published) options_.on_published();
    return;
  }
  if (now_ms < publish_retry_ms_) return;
  internalpb::InternalRequest entry;
  *entry.mutable_member_publish() = options_.self;
  entry.mutable_member_publish()->set_id(options_.id);
  // Client request ids never set the top bit (Member::NextId), so this cannot collide with one.
  entry.set_id((1ULL << 63) | static_cast<uint64_t>(now_ms));
  // A forwarded proposal lost on the way (a peer stream still connecting) is simply made again; a
  // publish applied twice changes nothing.
  publish_retry_ms_ = now_ms + 1000;
  std::vector<std::string> data = {entry.SerializeAsString()};
  if (node_->ProposeBatch(data).ok()) {
    // Answered (or not) like any proposal; the next sweep checks the stored record again.
    waiters_[entry.id()] =
        Waiter{[](storage::ApplyResult) {}, now_ms + options_.request_timeout_ms};
  }
}

namespace {
// Removes the entries of `waiters` (a map or multimap of Waiter/StatusWaiter) whose deadline has
// passed, handing each to `expire`.
template <typename Map, typename Expire>
void RemoveExpired(Map& waiters, int64_t now_ms, Expire expire) {
  for (auto it = waiters.begin(); it != waiters.end();) {
    if (it->second.deadline_ms <= now_ms) {
      expire(it->second);
      it = waiters.erase(it);
    } else {
      ++it;
    }
  }
}
}  // namespace

void NodeLoop::FinishTransfers(AppliedGroup* group) {
  auto [first, last] = transfers_.equal_range(leader_id());
  for (auto it = first; it != last; ++it)
    group->status_completions.emplace_back(std::move(it->second.done), absl::OkStatus());
  transfers_.erase(first, last);
}

void NodeLoop::ExpireWaiters(int64_t now_ms, AppliedGroup* group) {
  ExpireHeld(now_ms, group);
  RemoveExpired(waiters_, now_ms, [group](Waiter& w) {
    group->completions.emplace_back(std::move(w.done),
                                    storage::ApplyResult::Error(errors::RequestTimeout()));
  });
  auto time_out = [group](StatusWaiter& w) {
    group->status_completions.emplace_back(std::move(w.done), errors::RequestTimeout());
  };
  RemoveExpired(conf_waiters_, now_ms, time_out);
  RemoveExpired(reads_to_serve_, now_ms, time_out);
  RemoveExpired(transfers_, now_ms, [group](StatusWaiter& w) {
    group->status_completions.emplace_back(std::move(w.done), errors::LeaderTransferTimeout());
  });
  for (auto it = read_waiters_.begin(); it != read_waiters_.end();) {
    auto& list = it->second.waiters;
    for (auto w = list.begin(); w != list.end();) {
      if (w->deadline_ms <= now_ms) {
        time_out(*w);
        w = list.erase(w);
      } else {
        ++w;
      }
    }
    it = list.empty() ? read_waiters_.erase(it) : std::next(it);
  }
}

void NodeLoop::Hand(AppliedGroup group) {
  absl::MutexLock lock(&respond_mu_);
  to_respond_.push_back(std::move(group));
}

void NodeLoop::Respond() {
  std::vector<AppliedGroup> ready;
  while (true) {
    {
      absl::MutexLock lock(&respond_mu_);
      respond_mu_.Await(absl::Condition(
          +[](NodeLoop* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return self->respond_stopping_ || !self->to_respond_.empty();
          },
          this));
      if (to_respond_.empty()) return;  // stopping, and everything answered
      ready.swap(to_respond_);
    }
    for (auto& group : ready) {
      bool answered = false;
      const std::function<void()> answer = [&group, &answered] {
        if (answered) return;
        answered = true;
        for (auto& [done, result] : group.completions) {
          // As etcd counts them: proposals that timed out, lost their leader or were given up.
          const absl::Status& st = result.status;
          if ((absl::IsUnavailable(st) || st == errors::RequestCancelled()) &&
              st != errors::Stopped()) {
            Metrics::Get().CountProposalFailed();
          }
          done(std::move(result));
        }
        for (auto& [done, status] : group.status_completions) done(status);
      };
      // The observer answers the writers midway through its watchers (see WatchHub::Publish).
      if (observer_ && (!group.events.empty() || group.revision != 0)) {
        observer_(group.events, group.revision, group.resync, answer);
      }
      answer();
    }
    ready.clear();
  }
}

}  // namespace leasehold::server
