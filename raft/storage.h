// Storage: the read-only view of the durable Raft log, snapshot and hard state.
//
// Contract: the Raft state machine reads through this interface and never writes to it; the
// application persists Ready batches into its concrete implementation before calling Advance().
// Index space: entries in [FirstIndex(), LastIndex()] are readable; Term() is also valid for
// FirstIndex() - 1 (the index of the latest snapshot). Implementations need not be thread-safe
// unless the application touches them from several threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "raft/raft.pb.h"

namespace leasehold::raft {

namespace pb = ::leasehold::raftpb;

// The requested index precedes the first available entry (it was compacted into a snapshot).
[[nodiscard]] absl::Status CompactedError();
bool IsCompacted(const absl::Status& status);
// The requested index is past the last stored entry.
[[nodiscard]] absl::Status UnavailableError();
bool IsEntryUnavailable(const absl::Status& status);
// A snapshot older than the one already held was offered.
[[nodiscard]] absl::Status SnapshotOutOfDateError();

struct InitialState {
  pb::HardState hard_state;
  pb::ConfState conf_state;
};

class Storage {
 public:
  virtual ~Storage() = default;

  // Persisted hard state and the membership as of the latest snapshot.
  virtual InitialState GetInitialState() const = 0;
  // Entries in [lo, hi). Returns at least one entry when lo < hi, then stops before exceeding
  // max_bytes. CompactedError if lo < FirstIndex(). Precondition: hi <= LastIndex() + 1.
  [[nodiscard]] virtual absl::StatusOr<std::vector<pb::Entry>> Entries(
      uint64_t lo, uint64_t hi, uint64_t max_bytes) const = 0;
  // Term of the entry at `index`: CompactedError below FirstIndex() - 1, UnavailableError past
  // LastIndex().
  [[nodiscard]] virtual absl::StatusOr<uint64_t> Term(uint64_t index) const = 0;
  virtual uint64_t FirstIndex() const = 0;
  virtual uint64_t LastIndex() const = 0;
  // The latest snapshot. UnavailableError if one is being produced and is not ready yet.
  [[nodiscard]] virtual absl::StatusOr<pb::Snapshot> GetSnapshot() const = 0;
};

// Total serialized payload size of `entries`, used for message size limits.
uint64_t EntriesSize(const std::vector<pb::Entry>& entries);

// Trims `entries` so that it keeps at least one entry and stays within max_bytes.
void LimitSize(std::vector<pb::Entry>& entries, uint64_t max_bytes);

}  // namespace leasehold::raft
