// RaftLog implementation.
#include "raft/raft_log.h"

#include <algorithm>
#include <limits>

#include "raft/check.h"

namespace leasehold::raft {

RaftLog::RaftLog(const Storage* storage) : storage_(storage), unstable_(storage->LastIndex() + 1) {
  committed_ = storage->FirstIndex() - 1;
  applied_ = committed_;
}

std::optional<uint64_t> RaftLog::MaybeAppend(uint64_t index, uint64_t log_term, uint64_t committed,
                                             std::span<const pb::Entry> entries) {
  if (!MatchTerm(index, log_term)) return std::nullopt;
  const uint64_t last_new = index + entries.size();
  const uint64_t conflict = FindConflict(entries);
  if (conflict != 0) {
    RAFT_CHECK(conflict > committed_);  // committed entries never change
    Append(entries.subspan(conflict - (index + 1)));
  }
  CommitTo(std::min(committed, last_new));
  return last_new;
}

uint64_t RaftLog::Append(std::span<const pb::Entry> entries) {
  if (entries.empty()) return LastIndex();
  RAFT_CHECK(entries.front().index() - 1 >= committed_);
  unstable_.TruncateAndAppend(entries);
  return LastIndex();
}

uint64_t RaftLog::FindConflict(std::span<const pb::Entry> entries) const {
  for (const pb::Entry& e : entries) {
    if (!MatchTerm(e.index(), e.term())) return e.index();
  }
  return 0;
}

std::pair<uint64_t, uint64_t> RaftLog::FindConflictByTerm(uint64_t index, uint64_t term) const {
  for (;;) {
    absl::StatusOr<uint64_t> t = Term(index);
    if (!t.ok()) return {index, 0};
    if (*t <= term) return {index, *t};
    if (index == 0) return {0, 0};
    --index;
  }
}

std::vector<pb::Entry> RaftLog::NextCommittedEntries(uint64_t max_bytes) const {
  const uint64_t lo = std::max(applied_ + 1, FirstIndex());
  if (committed_ + 1 <= lo) return {};
  absl::StatusOr<std::vector<pb::Entry>> ents = Slice(lo, committed_ + 1, max_bytes);
  RAFT_CHECK(ents.ok());
  return *std::move(ents);
}

bool RaftLog::HasNextCommittedEntries() const {
  return committed_ + 1 > std::max(applied_ + 1, FirstIndex());
}

absl::StatusOr<pb::Snapshot> RaftLog::Snapshot() const {
  if (unstable_.snapshot()) return *unstable_.snapshot();
  return storage_->GetSnapshot();
}

uint64_t RaftLog::FirstIndex() const {
  if (auto i = unstable_.MaybeFirstIndex()) return *i;
  return storage_->FirstIndex();
}

uint64_t RaftLog::LastIndex() const {
  if (auto i = unstable_.MaybeLastIndex()) return *i;
  return storage_->LastIndex();
}

uint64_t RaftLog::LastTerm() const {
  absl::StatusOr<uint64_t> t = Term(LastIndex());
  RAFT_CHECK(t.ok());
  return *t;
}

absl::StatusOr<uint64_t> RaftLog::Term(uint64_t index) const {
  const uint64_t dummy = FirstIndex() - 1;
  if (index < dummy || index > LastIndex()) return 0;
  if (auto t = unstable_.MaybeTerm(index)) return *t;
  absl::StatusOr<uint64_t> t = storage_->Term(index);
  if (t.ok() || IsCompacted(t.status())) return t;
  internal::CheckFailed("storage lost an entry it reported", __FILE__, __LINE__);
}

bool RaftLog::MatchTerm(uint64_t index, uint64_t term) const {
  absl::StatusOr<uint64_t> t = Term(index);
  return t.ok() && *t == term;
}

bool RaftLog::IsUpToDate(uint64_t last_index, uint64_t term) const {
  const uint64_t last_term = LastTerm();
  return term > last_term || (term == last_term && last_index >= LastIndex());
}

bool RaftLog::MaybeCommit(uint64_t max_index, uint64_t term) {
  if (max_index <= committed_) return false;
  absl::StatusOr<uint64_t> t = Term(max_index);
  if (!t.ok() || *t != term) return false;
  CommitTo(max_index);
  return true;
}

void RaftLog::CommitTo(uint64_t index) {
  if (index <= committed_) return;
  RAFT_CHECK(index <= LastIndex());
  committed_ = index;
}

void RaftLog::AppliedTo(uint64_t index) {
  if (index == 0) return;
  RAFT_CHECK(index <= committed_ && index >= applied_);
  applied_ = index;
}

void RaftLog::Restore(const pb::Snapshot& snapshot) {
  committed_ = snapshot.metadata().index();
  unstable_.Restore(snapshot);
}

absl::StatusOr<std::vector<pb::Entry>> RaftLog::Slice(uint64_t lo, uint64_t hi,
                                                      uint64_t max_bytes) const {
  RAFT_CHECK(lo <= hi);
  if (lo == hi) return std::vector<pb::Entry>{};
  if (lo < FirstIndex()) return CompactedError();
  RAFT_CHECK(hi <= LastIndex() + 1);
  std::vector<pb::Entry> out;
  const uint64_t unstable_from = unstable_.offset();
  if (lo < unstable_from) {
    absl::StatusOr<std::vector<pb::Entry>> stored =
        storage_->Entries(lo, std::min(hi, unstable_from), max_bytes);
    if (!stored.ok()) {
      RAFT_CHECK(IsCompacted(stored.status()));
      return stored.status();
    }
    // The storage stopped early because of the size limit: do not go on into unstable entries.
    if (stored->size() < std::min(hi, unstable_from) - lo) return stored;
    out = *std::move(stored);
  }
  if (hi > unstable_from) {
    std::vector<pb::Entry> tail = unstable_.Slice(std::max(lo, unstable_from), hi);
    out.insert(out.end(), std::make_move_iterator(tail.begin()),
               std::make_move_iterator(tail.end()));
  }
  LimitSize(out, max_bytes);
  return out;
}

absl::StatusOr<std::vector<pb::Entry>> RaftLog::EntriesFrom(uint64_t index,
                                                            uint64_t max_bytes) const {
  if (index > LastIndex()) return std::vector<pb::Entry>{};
  return Slice(index, LastIndex() + 1, max_bytes);
}

}  // namespace leasehold::raft
