// Progress and Inflights implementation.
#include "raft/progress.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "raft/check.h"

namespace leasehold::raft {

void Inflights::Add(uint64_t last_index) {
  RAFT_CHECK(!Full());
  RAFT_CHECK(window_.empty() || window_.back() <= last_index);
  window_.push_back(last_index);
}

void Inflights::FreeLE(uint64_t index) {
  while (!window_.empty() && window_.front() <= index) window_.pop_front();
}

void Inflights::FreeFirstOne() {
  if (!window_.empty()) window_.pop_front();
}

const char* ProgressStateName(ProgressState state) {
  switch (state) {
    case ProgressState::kProbe:
      return "probe";
    case ProgressState::kReplicate:
      return "replicate";
    case ProgressState::kSnapshot:
      return "snapshot";
  }
  return "?";
}

void Progress::BecomeProbe() {
  if (state == ProgressState::kSnapshot) {
    const uint64_t pending = pending_snapshot;
    state = ProgressState::kProbe;
    next_index = std::max(match_index + 1, pending + 1);
  } else {
    state = ProgressState::kProbe;
    next_index = match_index + 1;
  }
  probe_sent = false;
  pending_snapshot = 0;
  inflights.Reset();
}

void Progress::BecomeReplicate() {
  state = ProgressState::kReplicate;
  next_index = match_index + 1;
  probe_sent = false;
  pending_snapshot = 0;
  inflights.Reset();
}

void Progress::BecomeSnapshot(uint64_t snapshot_index) {
  state = ProgressState::kSnapshot;
  pending_snapshot = snapshot_index;
  probe_sent = false;
  inflights.Reset();
}

bool Progress::MaybeUpdate(uint64_t index) {
  bool updated = false;
  if (match_index < index) {
    match_index = index;
    updated = true;
    probe_sent = false;
  }
  next_index = std::max(next_index, index + 1);
  return updated;
}

bool Progress::MaybeDecrTo(uint64_t rejected, uint64_t match_hint) {
  if (state == ProgressState::kReplicate) {
    if (rejected <= match_index) return false;
    next_index = match_index + 1;
    return true;
  }
  // Probe (or snapshot): only the rejection of the append we last sent counts.
  if (next_index - 1 != rejected) return false;
  next_index = std::max(std::min(rejected, match_hint + 1), match_index + 1);
  probe_sent = false;
  return true;
}

bool Progress::IsPaused() const {
  switch (state) {
    case ProgressState::kProbe:
      return probe_sent;
    case ProgressState::kReplicate:
      return inflights.Full();
    case ProgressState::kSnapshot:
      return true;
  }
  return true;
}

std::string Progress::DebugString() const {
  return absl::StrCat(ProgressStateName(state), " match=", match_index, " next=", next_index,
                      is_learner ? " learner" : "", " inflight=", inflights.Count());
}

}  // namespace leasehold::raft
