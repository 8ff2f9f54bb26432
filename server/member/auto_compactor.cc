#include "server/member/auto_compactor.h"

#include <algorithm>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "common/etcd_errors.h"
#include "server/member/member.h"
#include "server/observability/log.h"

namespace leasehold::server {

absl::StatusOr<AutoCompaction> ParseAutoCompaction(const std::string& mode,
                                                   const std::string& retention) {
  AutoCompaction config;
  if (mode == "periodic") {
    config.mode = AutoCompaction::Mode::kPeriodic;
  } else if (mode == "revision") {
    config.mode = AutoCompaction::Mode::kRevision;
  } else {
    return absl::InvalidArgumentError("unknown auto-compaction-mode \"" + mode + "\"");
  }
  int64_t whole = 0;
  if (absl::SimpleAtoi(retention, &whole) && whole >= 0) {
    if (config.mode == AutoCompaction::Mode::kRevision) {
      config.revisions = whole;
    } else {
      config.period = absl::Hours(whole);
    }
    return config;
  }
  absl::Duration period;
  if (!absl::ParseDuration(retention, &period) || period < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("error parsing CompactionRetention: invalid duration \"" +
                                      retention + "\"");
  }
  if (config.mode == AutoCompaction::Mode::kRevision) {
    return absl::InvalidArgumentError(
        "--auto-compaction-retention in revision mode is a number of revisions, not \"" +
        retention + "\"");
  }
  config.period = period;
  return config;
}

namespace {
absl::Duration CappedAtAnHour(absl::Duration d) { return std::min(d, absl::Hours(1)); }
// A tenth of the period, capped at six minutes; at least a millisecond, so that a tiny period
// does not spin.
absl::Duration StepOf(absl::Duration period) {
  return std::max(CappedAtAnHour(period) / 10, absl::Milliseconds(1));
}
// Steps covering the period (rounded up), so the oldest sample kept is at least a period old.
size_t StepsIn(absl::Duration period, absl::Duration step) {
  absl::Duration remainder;
  const int64_t whole = absl::IDivDuration(period, step, &remainder);
  return static_cast<size_t>(whole) + (remainder > absl::ZeroDuration() ? 1 : 0);
}
}  // namespace

PeriodicSchedule::PeriodicSchedule(absl::Duration period)
    : period_(period),
      step_(StepOf(period)),
      interval_(CappedAtAnHour(period)),
      keep_(StepsIn(period, step_) + 1),
      wait_(period) {}

void PeriodicSchedule::Reset() {
  samples_.clear();
  since_.reset();
  wait_ = period_;
}

std::optional<int64_t> PeriodicSchedule::Sample(absl::Time now, int64_t revision) {
  if (!since_) since_ = now;
  samples_.push_back(revision);
  if (samples_.size() > keep_) samples_.pop_front();  // the front is the revision one period ago
  if (now - *since_ < wait_) return std::nullopt;
  return samples_.front();
}

void PeriodicSchedule::Compacted(absl::Time now) {
  since_ = now;
  wait_ = interval_;
}

std::optional<int64_t> RevisionSchedule::Sample(int64_t revision) const {
  const int64_t target = revision - revisions_;
  if (target <= 0 || target == last_) return std::nullopt;
  return target;
}

AutoCompactor::AutoCompactor(Member* member, AutoCompaction config)
    : member_(member), config_(config) {}

void AutoCompactor::Start() {
  if (config_.enabled()) thread_ = std::thread([this] { Run(); });
}

void AutoCompactor::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void AutoCompactor::Run() {
  if (config_.mode == AutoCompaction::Mode::kRevision) {
    RevisionSchedule schedule(config_.revisions);
    while (!stop_.WaitForNotificationWithTimeout(RevisionSchedule::kStep)) {
      if (member_->proposer().leading_term() == 0) continue;
      const std::optional<int64_t> target = schedule.Sample(member_->state_machine().revision());
      if (!target) continue;
      LogInfo("starting auto revision compaction",
              {{"revision", std::to_string(*target)},
               {"revision-compaction-retention", std::to_string(config_.revisions)}});
      if (Compact(*target)) {
        schedule.Compacted(*target);
        LogInfo("completed auto revision compaction", {{"revision", std::to_string(*target)}});
      }
    }
    return;
  }
  PeriodicSchedule schedule(config_.period);
  while (!stop_.WaitForNotificationWithTimeout(schedule.step())) {
    if (member_->proposer().leading_term() == 0) {
      schedule.Reset();
      continue;
    }
    const std::optional<int64_t> target =
        schedule.Sample(absl::Now(), member_->state_machine().revision());
    if (!target) continue;
    LogInfo("starting auto periodic compaction", {{"revision", std::to_string(*target)},
                                                  {"compact-period", GoDuration(config_.period)}});
    if (Compact(*target)) {
      schedule.Compacted(absl::Now());
      LogInfo("completed auto periodic compaction", {{"revision", std::to_string(*target)}});
    }
  }
}

bool AutoCompactor::Compact(int64_t revision) {
  struct Outcome {
    absl::Mutex mu;
    std::optional<absl::Status> status;  // under mu
  };
  auto outcome = std::make_shared<Outcome>();
  internalpb::InternalRequest entry;
  entry.mutable_compaction()->set_revision(revision);
  member_->Submit(std::move(entry), [outcome](storage::ApplyResult result) {
    absl::MutexLock lock(&outcome->mu);
    outcome->status = std::move(result.status);
  });
  absl::MutexLock lock(&outcome->mu);
  // The request timeout answers every proposal; the stop only cuts the wait short.
  while (!outcome->status && !stop_.HasBeenNotified()) {
    outcome->mu.AwaitWithTimeout(
        absl::Condition(
            +[](std::optional<absl::Status>* s) { return s->has_value(); }, &outcome->status),
        absl::Milliseconds(100));
  }
  if (!outcome->status) return false;
  const absl::Status& st = *outcome->status;
  if (st.ok() || st == errors::Compacted()) return true;  // already compacted there: as good
  LogWarn("failed auto compaction",
          {{"revision", std::to_string(revision)}, {"error", st.ToString()}});
  return false;
}

}  // namespace leasehold::server
