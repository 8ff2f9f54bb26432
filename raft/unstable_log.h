// UnstableLog: entries and a snapshot the state machine holds that are not yet durable.
//
// Not thread-safe. entries_[k] has index offset_ + k. When a snapshot is pending it precedes all
// unstable entries (offset_ == snapshot index + 1).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "raft/storage.h"

namespace leasehold::raft {

class UnstableLog {
 public:
  explicit UnstableLog(uint64_t offset) : offset_(offset) {}

  // First index if only a snapshot pins it (snapshot index + 1).
  std::optional<uint64_t> MaybeFirstIndex() const;
  // Last index held here, from entries or the pending snapshot.
  std::optional<uint64_t> MaybeLastIndex() const;
  std::optional<uint64_t> MaybeTerm(uint64_t index) const;

  // The entries up to `index` (with matching `term`) became durable.
  void StableTo(uint64_t index, uint64_t term);
  // The pending snapshot at `index` became durable.
  void StableSnapTo(uint64_t index);
  void Restore(const pb::Snapshot& snapshot);
  // Appends entries, truncating any held suffix they overwrite.
  void TruncateAndAppend(std::span<const pb::Entry> entries);
  // Entries in [lo, hi). Precondition: offset_ <= lo <= hi <= offset_ + entries_.size().
  std::vector<pb::Entry> Slice(uint64_t lo, uint64_t hi) const;

  uint64_t offset() const { return offset_; }
  const std::vector<pb::Entry>& entries() const { return entries_; }
  const std::optional<pb::Snapshot>& snapshot() const { return snapshot_; }

 private:
  std::optional<pb::Snapshot> snapshot_;
  std::vector<pb::Entry> entries_;
  uint64_t offset_;
};

}  // namespace leasehold::raft
