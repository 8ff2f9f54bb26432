// Majority-quorum arithmetic: commit index and election tallies over a voter set.
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace leasehold::raft {

// Smallest number of voters that forms a majority of `voters` (voters > 0).
size_t QuorumSize(size_t voters);

// The largest index acknowledged by a majority, given one match index per voter. Returns 0 for an
// empty voter set (nothing can commit).
uint64_t MajorityCommitted(std::vector<uint64_t> match_indexes);

enum class VoteResult { kPending, kLost, kWon };

// Outcome of an election among `voters` voters with `granted` yes and `rejected` no votes.
VoteResult TallyVotes(size_t voters, size_t granted, size_t rejected);

}  // namespace leasehold::raft
