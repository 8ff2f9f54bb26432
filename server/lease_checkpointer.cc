#include "server/lease_checkpointer.h"

#include "storage/etcd_errors.h"

namespace leasehold::server {

void LeaseCheckpointer::Request(int64_t id, int64_t deadline_ms, Done done) {
  absl::MutexLock lock(&mu_);
  Pending& pending = pending_[id];
  pending.deadline_ms = std::max(pending.deadline_ms, deadline_ms);
  pending.waiters.push_back(std::move(done));
  if (!in_flight_) ProposeLocked();
}

void LeaseCheckpointer::ProposeLocked() {
  std::map<int64_t, Pending> batch;
  batch.swap(pending_);
  in_flight_ = true;
  internalpb::InternalRequest entry;
  const int64_t now = Member::NowUnixMs();
  auto* checkpoint = entry.mutable_lease_checkpoint();
  for (const auto& [id, pending] : batch) {
    auto* e = checkpoint->add_entries();
    e->set_id(id);
    // Relative to the entry's time, which Submit stamps from the same clock just after this.
    e->set_remaining_ms(std::max<int64_t>(0, pending.deadline_ms - now));
  }
  // The callback may run inline (a refused proposal), so it must not need mu_ from here: it is
  // handed the batch and takes the lock itself.
  auto shared = std::make_shared<std::map<int64_t, Pending>>(std::move(batch));
  mu_.Unlock();
  member_->Submit(std::move(entry), [this, shared](storage::ApplyResult result) {
    OnApplied(std::move(*shared), result.status);
  });
  mu_.Lock();
}

void LeaseCheckpointer::OnApplied(std::map<int64_t, Pending> batch, const absl::Status& status) {
  for (auto& [id, pending] : batch) {
    absl::Status outcome = status;
    if (outcome.ok() && !member_->state_machine().leases().Contains(id)) outcome = errors::LeaseNotFound();
    for (auto& done : pending.waiters) done(outcome);
  }
  absl::MutexLock lock(&mu_);
  in_flight_ = false;
  if (!pending_.empty()) ProposeLocked();
}

}  // namespace leasehold::server
