// Node: the application-facing Raft API, wrapping the Raft state machine with Ready/Advance.
//
// Usage: feed Tick()/Step()/Propose()/...; when HasReady(), take GetReady(), process it as
// described in ready.h, then Advance(). Exactly one Ready may be outstanding at a time.
// Not thread-safe; the caller serializes all calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "raft/raft.h"
#include "raft/ready.h"

namespace leasehold::raft {

class Node {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Node>> Create(const Config& config);

  void Tick() { raft_->Tick(); }
  [[nodiscard]] absl::Status Step(const pb::Message& m);
  [[nodiscard]] absl::Status Campaign() { return raft_->Campaign(); }
  [[nodiscard]] absl::Status Propose(std::string data) { return raft_->Propose({std::move(data)}); }
  // Proposes several entries as one batch (one log append, one message per follower).
  [[nodiscard]] absl::Status ProposeBatch(const std::vector<std::string>& data) {
    return raft_->Propose(data);
  }
  [[nodiscard]] absl::Status ProposeConfChange(const pb::ConfChange& change) {
    return raft_->ProposeConfChange(change);
  }
  [[nodiscard]] absl::Status ReadIndex(const std::string& context) {
    return raft_->ReadIndex(context);
  }
  [[nodiscard]] absl::Status TransferLeadership(uint64_t to) {
    return raft_->TransferLeadership(to);
  }
  pb::ConfState ApplyConfChange(const pb::ConfChange& change) {
    return raft_->ApplyConfChange(change);
  }
  void ReportSnapshot(uint64_t to, bool success) { raft_->ReportSnapshot(to, success); }
  bool LeaseValid() const { return raft_->LeaseValid(); }
  bool SoleMemberLeader() const { return raft_->SoleMemberLeader(); }

  bool HasReady() const;
  // Precondition: no Ready outstanding.
  Ready GetReady();
  // Declares the last Ready persisted, sent and applied.
  void Advance(const Ready& ready);

  Raft& raft() { return *raft_; }
  const Raft& raft() const { return *raft_; }

 private:
  Node(std::unique_ptr<Raft> raft, uint64_t max_committed_size);

  std::unique_ptr<Raft> raft_;
  const uint64_t max_committed_size_;
  SoftState prev_soft_;
  pb::HardState prev_hard_;
  bool ready_outstanding_ = false;
};

}  // namespace leasehold::raft
