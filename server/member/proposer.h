// The path from request handlers to the replicated state machine. NodeLoop implements it on Raft;
// the gRPC services see only this interface.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "leasehold/internal.pb.h"
#include "storage/apply/state_machine.h"

namespace leasehold::server {

class Proposer {
 public:
  using Done = std::function<void(storage::ApplyResult)>;
  virtual ~Proposer() = default;

  // Says whether the caller has gone (its call was cancelled or passed its deadline).
  using Abandoned = std::function<bool()>;

  // Makes `entry` durable on a quorum, applies it in log order and then calls `done` with the
  // result, on the responder thread (so `done` must not block). On failure before apply, `done`
  // gets etcd's Unavailable error: "no leader", "request timed out" or "server stopped".
  // A proposal held while no leader is known is dropped once `abandoned` (if set) says its caller
  // has gone, as etcd drops it, rather than written when a leader comes: a client that gave up
  // sees no late write. `done` then gets "request cancelled". Thread-safe.
  virtual void Propose(internalpb::InternalRequest entry, Done done, Abandoned abandoned) = 0;
  void Propose(internalpb::InternalRequest entry, Done done) {
    Propose(std::move(entry), std::move(done), nullptr);
  }
  // Calls `done` with OK once this member's state includes every write that any member answered,
  // or published events of, before the call (a linearizable read may then be served locally), or
  // with one of the errors above.
  virtual void ReadBarrier(std::function<void(absl::Status)> done) = 0;
  // Proposes a membership change (its context a MemberRecord with a change_id); `done` gets OK once
  // this member has applied it, "unhealthy cluster" while another change is still unapplied, or
  // one of the errors above.
  virtual void ProposeConfChange(raftpb::ConfChange change,
                                 std::function<void(absl::Status)> done) = 0;
  // Hands leadership to voter `to` (etcd's MoveLeader); `done` gets OK once `to` leads, or
  // "etcdserver: not leader" / "bad leader transferee" / "leader transfer took too long".
  virtual void TransferLeadership(uint64_t to, std::function<void(absl::Status)> done) = 0;

  // Highest log index known committed, highest applied, and the current Raft term.
  virtual uint64_t committed_index() const = 0;
  virtual uint64_t applied_index() const = 0;
  // Proposals made through this member and not yet answered (etcd_server_proposals_pending).
  virtual int64_t pending_proposals() const = 0;
  virtual uint64_t term() const = 0;
  // The current leader's member id (0 when none is known).
  virtual uint64_t leader_id() const = 0;
  // Whether this member is the leader and surely still is (it heard from a quorum within the
  // election timeout): only then may it answer for lease deadlines.
  virtual bool lease_valid() const = 0;
  // The term in which this member took over lease expiry (its lease collection became primary);
  // 0 while it does not. Stamped on its lease decisions (InternalRequest.leader_term).
  virtual uint64_t leading_term() const = 0;
};

}  // namespace leasehold::server
