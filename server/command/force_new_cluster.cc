#include "server/command/force_new_cluster.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rocksdb/write_batch.h"
#include "server/observability/log.h"

namespace leasehold::server {
namespace {

// The voters and learners after every committed entry: the stored membership (as of `applied`)
// with the changes committed after it.
absl::Status CommittedMembership(const storage::RaftLogStore& log, uint64_t applied,
                                 uint64_t commit, std::set<uint64_t>* voters,
                                 std::set<uint64_t>* learners) {
  const raftpb::ConfState stored = log.GetInitialState().conf_state;
  voters->insert(stored.voters().begin(), stored.voters().end());
  learners->insert(stored.learners().begin(), stored.learners().end());
  if (commit <= applied) return absl::OkStatus();
  auto entries = log.Entries(applied + 1, commit + 1, UINT64_MAX);
  if (!entries.ok()) return entries.status();
  for (const raftpb::Entry& e : *entries) {
    if (e.type() != raftpb::ENTRY_CONF_CHANGE) continue;
    raftpb::ConfChange change;
    if (!change.ParseFromString(e.data())) {
      return absl::DataLossError(absl::StrCat("malformed membership change at index ", e.index()));
    }
    const uint64_t id = change.node_id();
    switch (change.type()) {
      case raftpb::CONF_ADD_VOTER:
      case raftpb::CONF_PROMOTE_LEARNER:
        learners->erase(id);
        voters->insert(id);
        break;
      case raftpb::CONF_ADD_LEARNER:
        if (voters->count(id) == 0) learners->insert(id);
        break;
      case raftpb::CONF_REMOVE_NODE:
        voters->erase(id);
        learners->erase(id);
        break;
      default:
        break;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ForceNewCluster(uint64_t self_id, uint64_t applied, storage::Engine* engine,
                             storage::RaftLogStore* log) {
  if (log->empty()) return absl::OkStatus();
  raftpb::HardState hard_state = log->hard_state();
  // The applied state was committed, whatever the stored commit index says.
  const uint64_t commit = std::max(hard_state.commit(), applied);
  rocksdb::WriteBatch batch;
  if (log->LastIndex() > commit) {
    LogInfo("discarding uncommitted WAL entries",
            {{"entry-index", std::to_string(commit + 1)},
             {"commit-index-from-wal", std::to_string(commit)},
             {"number-of-discarded-entries", std::to_string(log->LastIndex() - commit)}});
    log->DiscardAfter(commit, &batch);
  }
  std::set<uint64_t> voters, learners;
  if (absl::Status st = CommittedMembership(*log, applied, commit, &voters, &learners); !st.ok())
    return st;
  if (voters.count(self_id) == 0 && learners.count(self_id) == 0) {
    // Its own removal is committed (not yet applied, or it would not have got this far): applying
    // it would stop the member for good, so it cannot be the one to carry the cluster on.
    return absl::FailedPreconditionError(
        "the member's own removal from the cluster is committed in its log: it cannot form a new "
        "cluster");
  }

  std::vector<raftpb::ConfChange> changes;
  for (const std::set<uint64_t>* ids : {&voters, &learners}) {
    for (uint64_t id : *ids) {
      if (id == self_id) continue;
      raftpb::ConfChange& remove = changes.emplace_back();
      remove.set_type(raftpb::CONF_REMOVE_NODE);
      remove.set_node_id(id);
    }
  }
  if (learners.count(self_id) != 0) {
    raftpb::ConfChange& promote = changes.emplace_back();
    promote.set_type(raftpb::CONF_PROMOTE_LEARNER);
    promote.set_node_id(self_id);
  }
  std::vector<raftpb::Entry> entries;
  uint64_t index = commit;
  for (const raftpb::ConfChange& change : changes) {
    raftpb::Entry& entry = entries.emplace_back();
    entry.set_term(hard_state.term());
    entry.set_index(++index);
    entry.set_type(raftpb::ENTRY_CONF_CHANGE);
    entry.set_data(change.SerializeAsString());
  }
  log->Append(entries, &batch);
  hard_state.set_commit(index);
  log->SetHardState(hard_state, &batch);
  if (absl::Status st = engine->Write(&batch, /*sync=*/true); !st.ok()) return st;
  LogInfo("forcing restart member", {{"local-member-id", absl::StrCat(absl::Hex(self_id))},
                                     {"commit-index", std::to_string(index)}});
  return absl::OkStatus();
}

}  // namespace leasehold::server
