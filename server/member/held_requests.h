// Proposals, membership changes and linearizable reads that came while no leader was known (an
// election): they wait for one, until their deadline, as etcd's do, rather than fail at once. What
// waits is bounded: past kMaxRequests requests or kMaxBytes of proposals (a flood through a long
// election) nothing more is held, and the loop refuses such requests at once with "no leader".
//
// Used by the node loop's thread only; time is the loop's clock, passed in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "server/member/loop_requests.h"

namespace leasehold::server {

class HeldRequests {
 public:
  static constexpr size_t kMaxRequests = 10000;
  static constexpr size_t kMaxBytes = 64 << 20;

  // Whether one more request, of `bytes` serialized for a proposal (0 otherwise), may be held.
  bool RoomFor(size_t bytes) const;
  // Holds a request; the caller has checked RoomFor.
  void Hold(PendingProposal proposal, size_t bytes);
  void Hold(PendingConfChange change);
  void Hold(PendingRead read);

  // Once a leader is known: puts everything held ahead of `inbox`'s requests, in arrival order,
  // except the proposals whose callers have gone, which are answered "request cancelled" in
  // `dropped` (a client that gave up sees no late write).
  void MoveAhead(Inbox& inbox, AppliedGroup* dropped);
  // Answers in `group` the proposals whose callers have gone ("request cancelled") and every
  // request whose deadline is at or before `now_ms` ("no leader": nothing reached a log, so a
  // client may safely send a write again elsewhere; etcd says "request timed out", with the same
  // code, Unavailable).
  void Expire(int64_t now_ms, AppliedGroup* group);

  size_t proposals() const { return held_.proposals.size(); }
  size_t size() const {
    return held_.proposals.size() + held_.conf_changes.size() + held_.reads.size();
  }

 private:
  // Drops the proposals whose callers have gone or whose deadline is at or before `now_ms`.
  void DropProposals(int64_t now_ms, AppliedGroup* group);

  Inbox held_;
  size_t bytes_ = 0;  // the held proposals' serialized size
};

}  // namespace leasehold::server
