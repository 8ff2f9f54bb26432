// NodeLoop, part 2: the requests the loop takes from its inbox: proposals, membership changes
// (and the leader's checks on them), linearizable reads by ReadIndex, leadership transfers; their
// expiry; and this member's publish of itself. See node_loop.h.
#include <chrono>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/etcd_errors.h"
#include "server/member/node_loop.h"
#include "server/member/reconfig_checks.h"
#include "server/observability/log.h"
#include "server/observability/metrics.h"

namespace leasehold::server {

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
    if (m.type() == raftpb::MSG_HEARTBEAT_RESPONSE) {
      if (auto sent = heartbeats_out_.find(m.from()); sent != heartbeats_out_.end()) {
        Metrics::Get().ObservePeerRoundTrip(
            absl::StrCat(absl::Hex(m.from())),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - sent->second).count());
        heartbeats_out_.erase(sent);
      }
    }
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
  if (!leaderless) held_.MoveAhead(inbox, &failed);
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
      } else if (leaderless && held_.RoomFor(data[i].size())) {
        held_.Hold(std::move(p), data[i].size());
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
    } else if (leaderless && held_.RoomFor(0)) {
      held_.Hold(std::move(c));
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
  if (!st.ok()) Metrics::Get().CountReadIndexFailed();
  AskedReads asked{{}, now_ms};
  for (auto& r : reads) {
    if (st.ok()) {
      asked.waiters.push_back(StatusWaiter{std::move(r.done), r.deadline_ms, node_->raft().lead()});
    } else if (leaderless && held_.RoomFor(0)) {
      held_.Hold(std::move(r));
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
  held_.Expire(now_ms, group);
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

}  // namespace leasehold::server
