// NodeLoop, part 1: its threads (the loop and the responder), start and stop, and the entry points
// other threads call. Parts 2 and 3: node_loop_requests.cc and node_loop_ready.cc.
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

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
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

int64_t NodeLoop::NowMs() const { return options_.steady_ms ? options_.steady_ms() : SteadyMs(); }

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
  config.random_seed = options_.id ^ static_cast<uint64_t>(NowMs());
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
    ProcessReady(NowMs());
    while (options_.replay_before_start && !sole_voter() &&
           state_machine_->applied_index() < node_->raft().log().committed()) {
      const uint64_t before = state_machine_->applied_index();
      ProcessReady(NowMs());
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
  held_.MoveAhead(left, &last);  // what waited for a leader is answered with the rest
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
  int64_t next_tick = NowMs() + options_.tick_ms;
  int64_t next_sweep = NowMs() + 100;
  Inbox inbox;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      const absl::Time deadline =
          absl::Now() + absl::Milliseconds(std::max<int64_t>(0, next_tick - NowMs()));
      mu_.AwaitWithDeadline(absl::Condition(
                                +[](NodeLoop* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                  return self->stopping_ || !self->inbox_.empty();
                                },
                                this),
                            deadline);
      if (stopping_) return;
      std::swap(inbox, inbox_);
    }
    int64_t now = NowMs();
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
    pending_proposals_.store(static_cast<int64_t>(waiters_.size() + held_.proposals()),
                             std::memory_order_relaxed);
    const bool sole_member_leader = node_->SoleMemberLeader();
    if (sole_member_leader && !sole_member_leader_.load(std::memory_order_relaxed)) {
      sole_member_read_floor_.store(node_->raft().log().LastIndex(), std::memory_order_release);
    }
    sole_member_leader_.store(sole_member_leader, std::memory_order_release);
    lease_checked_ms_.store(NowMs(), std::memory_order_relaxed);
  }
}

bool NodeLoop::lease_valid() const {
  return lease_valid_.load(std::memory_order_relaxed) &&
         NowMs() - lease_checked_ms_.load(std::memory_order_relaxed) <= 2 * options_.tick_ms;
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
