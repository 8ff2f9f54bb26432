// MemoryStorage: an in-memory Storage, for tests, simulation and as the model for durable ones.
//
// Not thread-safe. entries_[0] is a dummy entry carrying the snapshot's index and term, so the
// stored entries are entries_[1..] and FirstIndex() == entries_[0].index() + 1.
#pragma once

#include <string>
#include <vector>

#include "raft/storage.h"

namespace leasehold::raft {

class MemoryStorage : public Storage {
 public:
  MemoryStorage();

  InitialState GetInitialState() const override;
  [[nodiscard]] absl::StatusOr<std::vector<pb::Entry>> Entries(uint64_t lo, uint64_t hi,
                                                               uint64_t max_bytes) const override;
  [[nodiscard]] absl::StatusOr<uint64_t> Term(uint64_t index) const override;
  uint64_t FirstIndex() const override;
  uint64_t LastIndex() const override;
  [[nodiscard]] absl::StatusOr<pb::Snapshot> GetSnapshot() const override;

  void SetHardState(const pb::HardState& hard_state) { hard_state_ = hard_state; }
  const pb::HardState& hard_state() const { return hard_state_; }

  // Replaces the log with `snapshot`. SnapshotOutOfDateError if it is older than the current one.
  [[nodiscard]] absl::Status ApplySnapshot(const pb::Snapshot& snapshot);
  // Records a snapshot of the application at `index` (which must be stored and not compacted).
  [[nodiscard]] absl::StatusOr<pb::Snapshot> CreateSnapshot(uint64_t index,
                                                            const pb::ConfState& conf_state,
                                                            std::string data);
  // Discards entries up to and including compact_index (which must be <= LastIndex()).
  [[nodiscard]] absl::Status Compact(uint64_t compact_index);
  // Appends entries, overwriting any stored suffix they conflict with. Entries already compacted
  // are skipped. Precondition: entries are contiguous and start at or before LastIndex() + 1.
  [[nodiscard]] absl::Status Append(const std::vector<pb::Entry>& entries);

 private:
  pb::HardState hard_state_;
  pb::Snapshot snapshot_;
  std::vector<pb::Entry> entries_;
};

}  // namespace leasehold::raft
