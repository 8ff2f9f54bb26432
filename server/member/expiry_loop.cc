#include "server/member/expiry_loop.h"

#include <algorithm>

#include "server/observability/log.h"
#include "server/observability/metrics.h"

namespace leasehold::server {
namespace {
constexpr size_t kCheckpointsPerEntry = 10000;
}  // namespace

void ExpiryLoop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ExpiryLoop::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void ExpiryLoop::Run() {
  // Token bucket of revocations, refilled at the revoke rate. Its burst is two ticks' worth, so a
  // storm is spread evenly over time instead of landing as a second's revocations in one group.
  const double burst =
      std::max(1.0, 2.0 * options_.revoke_rate_per_second * options_.tick_ms / 1000.0);
  double budget = 0;
  int64_t last_tick = Member::NowUnixMs();
  int64_t last_checkpoint = last_tick;
  while (!stop_.WaitForNotificationWithTimeout(absl::Milliseconds(options_.tick_ms))) {
    if (!member_->state_machine().leases().is_primary()) continue;
    const int64_t now = Member::NowUnixMs();
    budget = std::min(burst, budget + options_.revoke_rate_per_second *
                                          std::max<int64_t>(0, now - last_tick) / 1000.0);
    last_tick = now;
    RevokeExpired(now, &budget);
    if (now - last_checkpoint >= options_.checkpoint_interval_ms) {
      Checkpoint(now);
      last_checkpoint = now;
    }
  }
}

void ExpiryLoop::RevokeExpired(int64_t now_ms, double* budget) {
  if (*budget < 1) return;
  // Read before deciding: a decision stamped with the term this member led in applies only if it
  // is logged in that term, so a deposed (e.g. paused) leader's decisions cannot revoke leases its
  // successor keeps alive.
  const uint64_t term = member_->proposer().leading_term();
  if (term == 0) return;
  auto expired = member_->state_machine().leases().PopExpired(now_ms, static_cast<size_t>(*budget),
                                                              options_.retry_ms);
  *budget -= static_cast<double>(expired.size());
  if (expired.empty()) return;
  LogInfo("revoking expired leases", {{"count", std::to_string(expired.size())}});
  Metrics::Get().CountExpiredRevokes(expired.size());
  for (int64_t id : expired) {
    internalpb::InternalRequest entry;
    entry.mutable_lease_revoke()->set_id(id);
    entry.set_leader_term(term);
    member_->Submit(std::move(entry), [id](storage::ApplyResult result) {
      // NotFound: revoked meanwhile by a client. Anything else is retried after retry_ms.
      if (!result.status.ok() && !absl::IsNotFound(result.status)) {
        LogWarn("expired lease revoke failed",
                {{"lease", std::to_string(id)}, {"error", result.status.ToString()}});
      }
    });
  }
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
