// Progress: the leader's view of one peer's replication state, with its in-flight window.
//
// Not thread-safe. Flow control: in kProbe the leader sends one append at a time and waits; in
// kReplicate it streams appends optimistically, bounded by Inflights; in kSnapshot it sends
// nothing until the snapshot is acknowledged or reported.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace leasehold::raft {

// Bounded window of unacknowledged appends, each recorded by its last entry index.
class Inflights {
 public:
  explicit Inflights(size_t capacity) : capacity_(capacity) {}
  // Precondition: !Full(); indexes are added in increasing order.
  void Add(uint64_t last_index);
  // Releases every append whose last index is <= index.
  void FreeLE(uint64_t index);
  void FreeFirstOne();
  bool Full() const { return window_.size() >= capacity_; }
  size_t Count() const { return window_.size(); }
  void Reset() { window_.clear(); }

 private:
  size_t capacity_;
  std::deque<uint64_t> window_;
};

enum class ProgressState { kProbe, kReplicate, kSnapshot };
const char* ProgressStateName(ProgressState state);

struct Progress {
  explicit Progress(size_t max_inflight) : inflights(max_inflight) {}

  uint64_t match_index = 0;
  uint64_t next_index = 1;
  ProgressState state = ProgressState::kProbe;
  // Index of the snapshot in flight while in kSnapshot.
  uint64_t pending_snapshot = 0;
  // Heard from since the last CheckQuorum round.
  bool recent_active = false;
  // In kProbe: an append was sent and no response has arrived yet.
  bool probe_sent = false;
  bool is_learner = false;
  // Highest leader tick echoed back by this peer (see Message.lease_tick).
  uint64_t lease_ack_tick = 0;
  Inflights inflights;

  void BecomeProbe();
  void BecomeReplicate();
  void BecomeSnapshot(uint64_t snapshot_index);
  // Records an acknowledgement up to `index`. Returns false if it was stale.
  bool MaybeUpdate(uint64_t index);
  // Replicate state: assumes entries up to `index` will arrive.
  void OptimisticUpdate(uint64_t index) { next_index = index + 1; }
  // Handles a rejection of the append anchored at `rejected`, moving next_index back to at most
  // match_hint + 1. Returns false if the rejection is stale.
  bool MaybeDecrTo(uint64_t rejected, uint64_t match_hint);
  // Whether the leader should hold off sending appends to this peer.
  bool IsPaused() const;
  std::string DebugString() const;
};

}  // namespace leasehold::raft
