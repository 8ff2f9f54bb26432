// NodeLoop, part 3: each Ready, in the contract's order: persist entries and hard state in one
// synced write, send messages, apply committed entries (and install snapshots), then compact the
// log when due; and what a change of leader means here. See node_loop.h.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/etcd_errors.h"
#include "server/member/node_loop.h"
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

void NodeLoop::ProcessReady(int64_t now_ms) {
  while (node_->HasReady()) {
    raft::Ready rd = node_->GetReady();
    if (rd.soft_state) OnSoftState(*rd.soft_state);
    rocksdb::WriteBatch batch;
    bool sync = !rd.entries.empty() || rd.snapshot.has_value();
    const auto ready_start = std::chrono::steady_clock::now();
    if (rd.snapshot) {
      Metrics::Get().SetSnapshotApplyInProgress(true);
      InstallSnapshot(*rd.snapshot, &batch);
    }
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
    const auto write_start = std::chrono::steady_clock::now();
    if (batch.Count() > 0) {
      if (sync) Metrics::Get().CountWalWriteBytes(batch.GetDataSize());
      WriteOrDie(engine_, &batch, sync);
    }
    if (snapshot_installed_) {
      snapshot_installed_ = false;
      const auto written = std::chrono::steady_clock::now();
      if (absl::Status st = state_machine_->ReloadFromEngine(); !st.ok()) {
        LogError("cannot load the installed snapshot; stopping", {{"error", st.ToString()}});
        std::abort();
      }
      Metrics::Get().ObserveSnapshotReceive(
          std::chrono::duration<double>(written - write_start).count(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - ready_start).count());
      Metrics::Get().SetSnapshotApplyInProgress(false);
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
  const auto now = std::chrono::steady_clock::now();
  for (const raftpb::Message& m : rd->messages) {
    if (m.type() != raftpb::MSG_HEARTBEAT) continue;
    // One unanswered heartbeat is timed per peer; one unanswered for 10 s was lost.
    auto [it, added] = heartbeats_out_.try_emplace(m.to(), now);
    if (!added && now - it->second > std::chrono::seconds(10)) it->second = now;
  }
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
  Metrics::Get().CountSlowApply();
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
  const auto start = std::chrono::steady_clock::now();
  raftpb::Snapshot snapshot;
  const uint64_t applied = state_machine_->applied_index();
  auto term = log_store_->Term(applied);
  if (!term.ok()) return term.status();
  snapshot.mutable_metadata()->set_index(applied);
  snapshot.mutable_metadata()->set_term(*term);
  *snapshot.mutable_metadata()->mutable_conf_state() = node_->raft().conf_state();
  const auto dump_start = std::chrono::steady_clock::now();
  if (absl::Status st = state_machine_->Dump(snapshot.mutable_data()); !st.ok()) return st;
  const auto done = std::chrono::steady_clock::now();
  Metrics::Get().ObserveSnapshotSave(std::chrono::duration<double>(done - dump_start).count(),
                                     std::chrono::duration<double>(done - start).count());
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
    leading_since_ms_ = NowMs();
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

}  // namespace leasehold::server
