// RaftLog: the node's view of its log, combining durable Storage with the UnstableLog, plus the
// commit and apply cursors.
//
// Not thread-safe. Owns the UnstableLog; does not own Storage, which must outlive it.
// Invariant: applied <= committed <= LastIndex(), and FirstIndex() - 1 <= applied.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "raft/storage.h"
#include "raft/unstable_log.h"

namespace leasehold::raft {

class RaftLog {
 public:
  explicit RaftLog(const Storage* storage);

  // Follower append: if the entry at `index` has term `log_term`, appends `entries` (dropping any
  // conflicting suffix), advances commit to min(committed, last new index) and returns the last
  // new index. Returns nullopt if the log does not match at `index`.
  std::optional<uint64_t> MaybeAppend(uint64_t index, uint64_t log_term, uint64_t committed,
                                      std::span<const pb::Entry> entries);
  // Appends entries after the last index (leader path). Returns the new last index.
  uint64_t Append(std::span<const pb::Entry> entries);

  // Index of the first entry in `entries` whose term differs from ours (or that we lack), or 0.
  uint64_t FindConflict(std::span<const pb::Entry> entries) const;
  // The largest index <= `index` whose term is <= `term`, with that term (0 if compacted away).
  std::pair<uint64_t, uint64_t> FindConflictByTerm(uint64_t index, uint64_t term) const;

  std::vector<pb::Entry> UnstableEntries() const { return unstable_.entries(); }
  const std::optional<pb::Snapshot>& UnstableSnapshot() const { return unstable_.snapshot(); }
  bool HasUnstable() const { return !unstable_.entries().empty() || unstable_.snapshot(); }
  // Committed entries not yet applied (bounded by max_bytes, at least one if any).
  std::vector<pb::Entry> NextCommittedEntries(uint64_t max_bytes) const;
  bool HasNextCommittedEntries() const;
  [[nodiscard]] absl::StatusOr<pb::Snapshot> Snapshot() const;

  uint64_t FirstIndex() const;
  uint64_t LastIndex() const;
  uint64_t LastTerm() const;
  // Term at `index`; 0 (not an error) outside [FirstIndex() - 1, LastIndex()]; CompactedError if
  // the storage compacted it concurrently.
  [[nodiscard]] absl::StatusOr<uint64_t> Term(uint64_t index) const;
  bool MatchTerm(uint64_t index, uint64_t term) const;
  // Whether a log ending at (last_index, term) is at least as up to date as ours (§5.4.1).
  bool IsUpToDate(uint64_t last_index, uint64_t term) const;

  // Advances commit to max_index only if that entry has term `term` (§5.4.2).
  bool MaybeCommit(uint64_t max_index, uint64_t term);
  // Precondition: index <= LastIndex(); never moves commit backwards.
  void CommitTo(uint64_t index);
  // Precondition: committed >= index.
  void AppliedTo(uint64_t index);
  void StableTo(uint64_t index, uint64_t term) { unstable_.StableTo(index, term); }
  void StableSnapTo(uint64_t index) { unstable_.StableSnapTo(index); }
  void Restore(const pb::Snapshot& snapshot);

  // Entries in [lo, hi) within max_bytes (at least one). CompactedError if lo < FirstIndex().
  [[nodiscard]] absl::StatusOr<std::vector<pb::Entry>> Slice(uint64_t lo, uint64_t hi,
                                                             uint64_t max_bytes) const;
  [[nodiscard]] absl::StatusOr<std::vector<pb::Entry>> EntriesFrom(uint64_t index,
                                                                   uint64_t max_bytes) const;

  uint64_t committed() const { return committed_; }
  uint64_t applied() const { return applied_; }

 private:
  const Storage* storage_;
  UnstableLog unstable_;
  uint64_t committed_;
  uint64_t applied_;
};

}  // namespace leasehold::raft
