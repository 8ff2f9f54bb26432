// The requests the node loop takes from handlers, and what it hands its responder thread to answer.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "leasehold/internal.pb.h"
#include "mvccpb/kv.pb.h"
#include "raft/raft.pb.h"
#include "server/member/proposer.h"
#include "storage/apply/state_machine.h"

namespace leasehold::server {

using StatusDone = std::function<void(absl::Status)>;

// In each, deadline_ms is 0 until the loop first takes the request (then its arrival plus the
// request timeout).
struct PendingProposal {
  internalpb::InternalRequest entry;
  Proposer::Done done;
  Proposer::Abandoned abandoned;  // may be empty
  int64_t deadline_ms = 0;
};
struct PendingConfChange {
  raftpb::ConfChange change;
  StatusDone done;
  int64_t deadline_ms = 0;
};
struct PendingRead {
  StatusDone done;
  int64_t deadline_ms = 0;
};
// What handlers and the transport left for the loop since its last round.
struct Inbox {
  std::vector<raftpb::Message> messages;
  std::vector<PendingProposal> proposals;
  std::vector<PendingConfChange> conf_changes;
  std::vector<PendingRead> reads;
  std::vector<std::pair<uint64_t, bool>> snapshot_reports;
  std::vector<std::pair<uint64_t, StatusDone>> transfers;
  int advance_ticks = 0;
  bool empty() const {
    return messages.empty() && proposals.empty() && conf_changes.empty() && reads.empty() &&
           snapshot_reports.empty() && transfers.empty() && advance_ticks == 0;
  }
};
// One Ready's applied entries and what to answer, handed to the responder in log order.
struct AppliedGroup {
  std::vector<mvccpb::Event> events;
  int64_t revision = 0;
  bool resync = false;  // a snapshot was installed before this group's entries
  std::vector<std::pair<Proposer::Done, storage::ApplyResult>> completions;
  std::vector<std::pair<StatusDone, absl::Status>> status_completions;
};

}  // namespace leasehold::server
