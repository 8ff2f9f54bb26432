// Ready batch helpers.
#include "raft/ready.h"

namespace leasehold::raft {

bool Ready::empty() const {
  return !soft_state && !hard_state && !snapshot && entries.empty() && committed_entries.empty() &&
         messages.empty() && read_states.empty();
}

bool HardStateEqual(const pb::HardState& a, const pb::HardState& b) {
  return a.term() == b.term() && a.vote() == b.vote() && a.commit() == b.commit();
}

bool IsEmptyHardState(const pb::HardState& hs) { return HardStateEqual(hs, pb::HardState()); }

}  // namespace leasehold::raft
