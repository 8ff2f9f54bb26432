// RaftLogStore: the durable Raft log, hard state and membership of one member, in the member's
// RocksDB database, implementing the Raft library's Storage interface.
//
// Writes go into a caller's WriteBatch so that one synced write persists a whole Ready (entries and
// hard state together: the group commit). The in-memory index (first index, the terms of every
// stored entry) is updated when the batch is prepared, so the caller must write the batch before it
// lets the Raft node read the store again (the node loop does: persist, then Advance).
//
// Compaction drops a prefix of the log; the position it ends at (index and term) is kept under meta
// "raft_snapshot". A follower that needs dropped entries gets a snapshot of the current state, made
// on demand by the snapshot source.
//
// The membership (ConfState) is written by the state machine with the applied index, so that it is
// exactly the membership as of the applied entries; this class only reads it back on start.
//
// Not thread-safe: owned by the node loop's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "raft/storage.h"
#include "rocksdb/write_batch.h"
#include "storage/backend/engine.h"

namespace leasehold::storage {

class RaftLogStore : public raft::Storage {
 public:
  // Loads the log index from `engine` (not owned). DataLoss if the stored log has gaps or
  // unreadable entries.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<RaftLogStore>> Open(Engine* engine);

  // raft::Storage.
  raft::InitialState GetInitialState() const override;
  [[nodiscard]] absl::StatusOr<std::vector<raft::pb::Entry>> Entries(
      uint64_t lo, uint64_t hi, uint64_t max_bytes) const override;
  [[nodiscard]] absl::StatusOr<uint64_t> Term(uint64_t index) const override;
  uint64_t FirstIndex() const override { return first_index_; }
  uint64_t LastIndex() const override { return first_index_ + terms_.size() - 1; }
  [[nodiscard]] absl::StatusOr<raft::pb::Snapshot> GetSnapshot() const override;

  // The hard state as last set (what is or is about to be durable).
  const raft::pb::HardState& hard_state() const { return hard_state_; }

  // True when nothing was ever stored (a member that has not bootstrapped or joined yet).
  bool empty() const { return terms_.empty() && first_index_ == 1 && hard_state_.term() == 0; }

  // Adds `entries` to `batch`, replacing any stored suffix they conflict with. Precondition: they
  // are contiguous and start in (FirstIndex(), LastIndex() + 1].
  void Append(const std::vector<raft::pb::Entry>& entries, rocksdb::WriteBatch* batch);
  void SetHardState(const raft::pb::HardState& hard_state, rocksdb::WriteBatch* batch);
  // Drops the stored entries after `index` (none if it is the last). Only for forcing a new
  // cluster, which discards what was never committed; Raft itself replaces a suffix by Append.
  void DiscardAfter(uint64_t index, rocksdb::WriteBatch* batch);

  // Membership record the state machine keeps with its applied index (meta key "conf_state").
  static void PutConfState(const raft::pb::ConfState& conf_state, rocksdb::WriteBatch* batch);
  static bool IsConfStateKey(std::string_view key);

  // Produces a snapshot of the application's current state for GetSnapshot (a follower needs
  // entries that were compacted away). Set once, before the Raft node reads the store.
  using SnapshotSource = std::function<absl::StatusOr<raft::pb::Snapshot>()>;
  void set_snapshot_source(SnapshotSource source) { snapshot_source_ = std::move(source); }

  // Discards entries up to and including `index` (which must be stored and applied). The state
  // machine stands in for them: a follower that needs them gets a snapshot.
  void Compact(uint64_t index, rocksdb::WriteBatch* batch);
  // Replaces the whole log with a received snapshot's position (its state is installed by the
  // state machine in the same batch).
  void ApplySnapshot(const raft::pb::SnapshotMetadata& metadata, rocksdb::WriteBatch* batch);

 private:
  explicit RaftLogStore(Engine* engine) : engine_(engine) {}

  Engine* const engine_;
  raft::pb::HardState hard_state_;
  raft::pb::ConfState conf_state_;
  SnapshotSource snapshot_source_;
  // Index and term of the entry just before the first stored one (0, 0 until a snapshot).
  uint64_t snapshot_index_ = 0;
  uint64_t snapshot_term_ = 0;
  uint64_t first_index_ = 1;
  // terms_[i] is the term of entry first_index_ + i. Invariant: one per stored entry.
  std::deque<uint64_t> terms_;
};

}  // namespace leasehold::storage
