// Ready: one batch of work the Raft state machine hands to the application.
//
// Processing order (the contract the application must follow):
//   1. persist `snapshot` (if any), `entries` and `hard_state` (if set) to Storage;
//   2. only then send `messages` (a leader may send them before step 1 when
//      `may_send_before_persisting` is set; it must still finish step 1 before it steps any reply);
//   3. apply `snapshot` and then `committed_entries` to the state machine (for conf change
//      entries, call Node::ApplyConfChange);
//   4. serve each of `read_states` once the state machine has applied its index;
//   5. call Node::Advance(ready).
#pragma once

#include <optional>
#include <vector>

#include "raft/raft.h"
#include "raft/read_only.h"
#include "raft/storage.h"

namespace leasehold::raft {

// Volatile state worth reporting (not persisted).
struct SoftState {
  uint64_t lead = kNoNode;
  Role role = Role::kFollower;
  friend bool operator==(const SoftState&, const SoftState&) = default;
};

struct Ready {
  std::optional<SoftState> soft_state;       // set when leader or role changed
  std::optional<pb::HardState> hard_state;   // set when it changed; persist
  std::optional<pb::Snapshot> snapshot;      // persist and install
  std::vector<pb::Entry> entries;            // persist (before sending messages; see below)
  std::vector<pb::Entry> committed_entries;  // apply in order
  std::vector<pb::Message> messages;         // send after persisting, unless the flag below
  std::vector<ReadState> read_states;        // serve once applied >= index
  // True when `messages` may be sent before `entries` and `hard_state` are persisted, so that a
  // leader's followers write alongside it (Raft thesis 10.2.1). Only a leader's, and only when they
  // reveal nothing the disk does not hold yet: no new term or vote, no snapshot, and a commit index
  // below `entries` (a sole voter commits on append). The application must still persist before it
  // steps any reply to them, which a loop that persists before taking new input does.
  bool may_send_before_persisting = false;

  bool empty() const;
};

bool HardStateEqual(const pb::HardState& a, const pb::HardState& b);
bool IsEmptyHardState(const pb::HardState& hs);

}  // namespace leasehold::raft
