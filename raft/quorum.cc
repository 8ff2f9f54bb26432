// Majority-quorum arithmetic implementation.
#include "raft/quorum.h"

#include <algorithm>
#include <functional>

namespace leasehold::raft {

size_t QuorumSize(size_t voters) { return voters / 2 + 1; }

uint64_t MajorityCommitted(std::vector<uint64_t> match_indexes) {
  if (match_indexes.empty()) return 0;
  std::sort(match_indexes.begin(), match_indexes.end(), std::greater<>());
  return match_indexes[QuorumSize(match_indexes.size()) - 1];
}

VoteResult TallyVotes(size_t voters, size_t granted, size_t rejected) {
  const size_t quorum = QuorumSize(voters);
  if (granted >= quorum) return VoteResult::kWon;
  if (voters - rejected < quorum) return VoteResult::kLost;
  return VoteResult::kPending;
}

}  // namespace leasehold::raft
