// Node implementation: builds Ready batches from the Raft state machine.
#include "raft/node.h"

#include "raft/check.h"

namespace leasehold::raft {

absl::StatusOr<std::unique_ptr<Node>> Node::Create(const Config& config) {
  absl::StatusOr<std::unique_ptr<Raft>> r = Raft::Create(config);
  if (!r.ok()) return r.status();
  return std::unique_ptr<Node>(new Node(*std::move(r), config.max_committed_size_per_ready));
}

Node::Node(std::unique_ptr<Raft> raft, uint64_t max_committed_size)
    : raft_(std::move(raft)), max_committed_size_(max_committed_size) {
  prev_soft_ = SoftState{raft_->lead(), raft_->role()};
  prev_hard_ = raft_->hard_state();
}

absl::Status Node::Step(const pb::Message& m) {
  // Local-only message types must not arrive from the network without a term.
  if (m.term() == 0 && m.type() != pb::MSG_PROPOSE && m.type() != pb::MSG_READ_INDEX) {
    return absl::InvalidArgumentError("raft: network message without a term");
  }
  return raft_->Step(m);
}

bool Node::HasReady() const {
  const Raft& r = *raft_;
  if (SoftState{r.lead(), r.role()} != prev_soft_) return true;
  if (!HardStateEqual(r.hard_state(), prev_hard_)) return true;
  if (r.log().HasUnstable() || r.log().HasNextCommittedEntries()) return true;
  return r.HasPendingOutput();
}

Ready Node::GetReady() {
  RAFT_CHECK(!ready_outstanding_);
  Raft& r = *raft_;
  Ready rd;
  SoftState soft{r.lead(), r.role()};
  if (soft != prev_soft_) rd.soft_state = soft;
  rd.messages = r.TakeMessages();  // may append (batched broadcast), so take it first
  rd.read_states = r.TakeReadStates();
  pb::HardState hs = r.hard_state();
  if (!HardStateEqual(hs, prev_hard_)) rd.hard_state = hs;
  if (r.log().UnstableSnapshot()) rd.snapshot = *r.log().UnstableSnapshot();
  rd.entries = r.log().UnstableEntries();
  rd.committed_entries = r.log().NextCommittedEntries(max_committed_size_);
  rd.may_send_before_persisting = r.role() == Role::kLeader && !rd.snapshot &&
                                  hs.term() == prev_hard_.term() &&
                                  hs.vote() == prev_hard_.vote() &&
                                  (rd.entries.empty() || hs.commit() < rd.entries.front().index());
  ready_outstanding_ = true;
  return rd;
}

void Node::Advance(const Ready& rd) {
  RAFT_CHECK(ready_outstanding_);
  ready_outstanding_ = false;
  Raft& r = *raft_;
  if (rd.soft_state) prev_soft_ = *rd.soft_state;
  if (rd.hard_state) prev_hard_ = *rd.hard_state;
  if (rd.snapshot) r.log().StableSnapTo(rd.snapshot->metadata().index());
  if (!rd.entries.empty()) r.log().StableTo(rd.entries.back().index(), rd.entries.back().term());
  if (!rd.committed_entries.empty()) {
    r.OnApplied(rd.committed_entries.back().index());
  } else if (rd.snapshot && rd.snapshot->metadata().index() > r.log().applied()) {
    r.OnApplied(rd.snapshot->metadata().index());
  }
}

}  // namespace leasehold::raft
