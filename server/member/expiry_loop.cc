#include "server/member/expiry_loop.h"

#include <algorithm>
#include <limits>

#include "absl/synchronization/mutex.h"
#include "server/observability/log.h"
#include "server/observability/metrics.h"

namespace leasehold::server {
namespace {
constexpr size_t kCheckpointsPerEntry = 10000;
}  // namespace

struct ExpiryLoop::Pacing {
  absl::Mutex mu;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  // When the entry in flight was proposed; 0 when none is. Its completion clears it, unless a
  // later entry (`proposed` counts them) has taken its place.
  int64_t in_flight_since_ms ABSL_GUARDED_BY(mu) = 0;
  uint64_t proposed ABSL_GUARDED_BY(mu) = 0;
};

ExpiryLoop::ExpiryLoop(Member* member, Options options)
    : member_(member), options_(options), pacing_(std::make_shared<Pacing>()) {}

ExpiryLoop::~ExpiryLoop() { Stop(); }

void ExpiryLoop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ExpiryLoop::Stop() {
  {
    absl::MutexLock lock(&pacing_->mu);
    pacing_->stopping = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ExpiryLoop::Run() {
  // With a rate set: a token bucket of revocations refilled at that rate. Its burst is two ticks'
  // worth, so a storm is spread evenly over time instead of landing as a second's revocations at
  // once.
  const bool capped = options_.revoke_rate_per_second > 0;
  const double burst =
      capped ? std::max(1.0, 2.0 * options_.revoke_rate_per_second * options_.tick_ms / 1000.0)
             : std::numeric_limits<double>::infinity();
  double budget = 0;
  int64_t last_tick = Member::NowUnixMs();
  int64_t last_checkpoint = last_tick;
  bool more_due = false;
  Pacing& pacing = *pacing_;
  // Wakes at each tick, or at once when the entry in flight has applied and more may be due.
  auto wake = [&pacing, &more_due]() {
    return pacing.stopping || (more_due && pacing.in_flight_since_ms == 0);
  };
  while (true) {
    {
      absl::MutexLock lock(&pacing.mu);
      pacing.mu.AwaitWithTimeout(absl::Condition(&wake), absl::Milliseconds(options_.tick_ms));
      if (pacing.stopping) return;
    }
    more_due = false;
    if (!member_->state_machine().leases().is_primary()) continue;
    const int64_t now = Member::NowUnixMs();
    if (capped) {
      budget = std::min(burst, budget + options_.revoke_rate_per_second *
                                            std::max<int64_t>(0, now - last_tick) / 1000.0);
    } else {
      budget = burst;
    }
    last_tick = now;
    more_due = RevokeExpired(now, &budget);
    if (now - last_checkpoint >= options_.checkpoint_interval_ms) {
      Checkpoint(now);
      last_checkpoint = now;
    }
  }
}

bool ExpiryLoop::RevokeExpired(int64_t now_ms, double* budget) {
  if (*budget < 1) return false;
  {
    // One entry at a time. Its completion always comes (applied, or failed with "request timed
    // out" and the like); the age check is a safety net so that expiry can never stall for good.
    absl::MutexLock lock(&pacing_->mu);
    if (pacing_->in_flight_since_ms != 0 &&
        now_ms - pacing_->in_flight_since_ms < options_.retry_ms) {
      return false;
    }
  }
  // Read before deciding: a decision stamped with the term this member led in applies only if it
  // is logged in that term, so a deposed (e.g. paused) leader's decisions cannot revoke leases its
  // successor keeps alive.
  const uint64_t term = member_->proposer().leading_term();
  if (term == 0) return false;
  const size_t max_leases =
      std::min(options_.max_leases_per_entry, static_cast<size_t>(std::min(*budget, 1e9)));
  auto expired = member_->state_machine().leases().PopExpired(
      now_ms, max_leases, options_.max_keys_per_entry, options_.retry_ms);
  if (expired.empty()) return false;
  *budget -= static_cast<double>(expired.size());
  Metrics::Get().CountExpiredRevokes(expired.size());
  internalpb::InternalRequest entry;
  entry.mutable_lease_expiry()->mutable_ids()->Assign(expired.begin(), expired.end());
  entry.set_leader_term(term);
  uint64_t seq;
  {
    absl::MutexLock lock(&pacing_->mu);
    pacing_->in_flight_since_ms = now_ms;
    seq = ++pacing_->proposed;
  }
  const size_t count = expired.size();
  member_->Submit(std::move(entry), [pacing = pacing_, seq, count](storage::ApplyResult result) {
    // Leases not revoked come back after retry_ms.
    if (!result.status.ok()) {
      LogWarn("expired leases' revoke failed",
              {{"leases", std::to_string(count)}, {"error", result.status.ToString()}});
    }
    absl::MutexLock lock(&pacing->mu);
    if (pacing->proposed == seq) pacing->in_flight_since_ms = 0;
  });
  return true;
}

void ExpiryLoop::Checkpoint(int64_t now_ms) {
  const uint64_t term = member_->proposer().leading_term();
  if (term == 0) return;
  auto remaining = member_->state_machine().leases().TakeCheckpoints(now_ms);
  for (size_t start = 0; start < remaining.size(); start += kCheckpointsPerEntry) {
    internalpb::InternalRequest entry;
    entry.set_leader_term(term);
    auto* checkpoint = entry.mutable_lease_checkpoint();
    for (size_t i = start; i < std::min(remaining.size(), start + kCheckpointsPerEntry); ++i) {
      auto* e = checkpoint->add_entries();
      e->set_id(remaining[i].first);
      e->set_remaining_ms(remaining[i].second);
    }
    member_->Submit(std::move(entry), [](storage::ApplyResult result) {
      if (!result.status.ok())
        LogWarn("lease checkpoint failed", {{"error", result.status.ToString()}});
    });
  }
}

}  // namespace leasehold::server
