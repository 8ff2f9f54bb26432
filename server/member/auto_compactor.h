// etcd's automatic compaction (--auto-compaction-mode, --auto-compaction-retention): the leader
// compacts the key-value history on its own, through the same log entry a client's Compact takes.
//
//   periodic, retention P: the revision is sampled every min(P, 1h)/10; once P has passed since
//     this member began leading (or since its last compaction), it compacts to the revision it
//     sampled about P ago, then again every min(P, 1h). History younger than P is kept.
//   revision, retention N: every 5 minutes, it compacts to the current revision minus N (when
//     that is positive and moved since the last time). The newest N revisions are kept.
//
// A member that does not lead samples nothing and starts afresh when it leads again, as etcd's
// compactor pauses on followers. The schedules are pure (time passed in) so they can be tested.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace leasehold::server {

class Member;

struct AutoCompaction {
  enum class Mode { kPeriodic, kRevision };
  Mode mode = Mode::kPeriodic;
  absl::Duration period = absl::ZeroDuration();  // periodic mode
  int64_t revisions = 0;                         // revision mode
  bool enabled() const { return period > absl::ZeroDuration() || revisions > 0; }
};

// etcd's reading of the two flags: a retention that is a whole number counts hours (periodic) or
// revisions (revision mode), anything else is a duration ("30m"); "0" turns compaction off.
[[nodiscard]] absl::StatusOr<AutoCompaction> ParseAutoCompaction(const std::string& mode,
                                                                 const std::string& retention);

// When the periodic mode compacts, and to what, from samples of the revision.
class PeriodicSchedule {
 public:
  explicit PeriodicSchedule(absl::Duration period);
  // How often Sample is to be called.
  absl::Duration step() const { return step_; }
  // Forgets every sample: this member stopped leading.
  void Reset();
  // Records `revision` at `now`; returns the revision to compact to when it is time to.
  std::optional<int64_t> Sample(absl::Time now, int64_t revision);
  // The compaction Sample asked for took effect (or was already done) at `now`.
  void Compacted(absl::Time now);

 private:
  const absl::Duration period_;
  const absl::Duration step_;      // min(period, 1h) / 10, at least 1 ms
  const absl::Duration interval_;  // min(period, 1h): between compactions after the first
  const size_t keep_;              // samples spanning the period
  std::deque<int64_t> samples_;
  std::optional<absl::Time> since_;  // the start of leading, then the last compaction
  absl::Duration wait_;              // period before the first compaction, interval after
};

// When the revision mode compacts, and to what.
class RevisionSchedule {
 public:
  explicit RevisionSchedule(int64_t revisions) : revisions_(revisions) {}
  static constexpr absl::Duration kStep = absl::Minutes(5);
  std::optional<int64_t> Sample(int64_t revision) const;
  void Compacted(int64_t target) { last_ = target; }

 private:
  const int64_t revisions_;
  int64_t last_ = 0;
};

// The thread that runs the configured schedule on the leader (none when compaction is off).
class AutoCompactor {
 public:
  AutoCompactor(Member* member, AutoCompaction config);
  ~AutoCompactor() { Stop(); }
  void Start();
  void Stop();

 private:
  void Run();
  // Proposes a compaction to `revision`; true once it applied or the history was already compacted
  // there.
  bool Compact(int64_t revision);

  Member* const member_;
  const AutoCompaction config_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace leasehold::server
