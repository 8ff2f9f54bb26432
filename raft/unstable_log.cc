// UnstableLog implementation.
#include "raft/unstable_log.h"

#include "raft/check.h"

namespace leasehold::raft {

std::optional<uint64_t> UnstableLog::MaybeFirstIndex() const {
  if (snapshot_) return snapshot_->metadata().index() + 1;
  return std::nullopt;
}

std::optional<uint64_t> UnstableLog::MaybeLastIndex() const {
  if (!entries_.empty()) return offset_ + entries_.size() - 1;
  if (snapshot_) return snapshot_->metadata().index();
  return std::nullopt;
}

std::optional<uint64_t> UnstableLog::MaybeTerm(uint64_t index) const {
  if (index < offset_) {
    if (snapshot_ && snapshot_->metadata().index() == index) return snapshot_->metadata().term();
    return std::nullopt;
  }
  if (index - offset_ >= entries_.size()) return std::nullopt;
  return entries_[index - offset_].term();
}

void UnstableLog::StableTo(uint64_t index, uint64_t term) {
  std::optional<uint64_t> t = MaybeTerm(index);
  // Only drop entries if the durable entry is still the one we hold (not since overwritten).
  if (!t || *t != term || index < offset_) return;
  entries_.erase(entries_.begin(), entries_.begin() + (index + 1 - offset_));
  offset_ = index + 1;
}

void UnstableLog::StableSnapTo(uint64_t index) {
  if (snapshot_ && snapshot_->metadata().index() == index) snapshot_.reset();
}

void UnstableLog::Restore(const pb::Snapshot& snapshot) {
  offset_ = snapshot.metadata().index() + 1;
  entries_.clear();
  snapshot_ = snapshot;
}

void UnstableLog::TruncateAndAppend(std::span<const pb::Entry> entries) {
  if (entries.empty()) return;
  const uint64_t after = entries.front().index();
  if (after == offset_ + entries_.size()) {
    // Directly follows what we hold.
  } else if (after <= offset_) {
    // Replaces everything held here; the durable log past `after` will be overwritten too.
    offset_ = after;
    entries_.clear();
  } else {
    entries_.resize(after - offset_);
  }
  entries_.insert(entries_.end(), entries.begin(), entries.end());
}

std::vector<pb::Entry> UnstableLog::Slice(uint64_t lo, uint64_t hi) const {
  RAFT_CHECK(offset_ <= lo && lo <= hi && hi <= offset_ + entries_.size());
  return std::vector<pb::Entry>(entries_.begin() + (lo - offset_),
                                entries_.begin() + (hi - offset_));
}

}  // namespace leasehold::raft
