#include "server/member/lease_checkpointer.h"

#include "common/etcd_errors.h"

namespace leasehold::server {

void LeaseCheckpointer::Request(int64_t id, int64_t deadline_ms, Done done) {
  std::map<int64_t, Pending> batch;
  {
    absl::MutexLock lock(&mu_);
    Pending& pending = pending_[id];
    pending.deadline_ms = std::max(pending.deadline_ms, deadline_ms);
    pending.waiters.push_back(std::move(done));
    if (in_flight_) return;  // joins the next round
    in_flight_ = true;
    batch.swap(pending_);
  }
  Propose(std::move(batch));
}

void LeaseCheckpointer::Propose(std::map<int64_t, Pending> batch) {
  internalpb::InternalRequest entry;
  const int64_t now = Member::NowUnixMs();
  auto* checkpoint = entry.mutable_lease_checkpoint();
  for (const auto& [id, pending] : batch) {
    auto* e = checkpoint->add_entries();
    e->set_id(id);
    // Relative to the entry's time, which Submit stamps from the same clock just after this.
    e->set_remaining_ms(std::max<int64_t>(0, pending.deadline_ms - now));
  }
  auto shared = std::make_shared<std::map<int64_t, Pending>>(std::move(batch));
  member_->Submit(std::move(entry), [this, shared](storage::ApplyResult result) {
    OnApplied(std::move(*shared), result.status);
  });
}

void LeaseCheckpointer::OnApplied(std::map<int64_t, Pending> batch, const absl::Status& status) {
  for (auto& [id, pending] : batch) {
    absl::Status outcome = status;
    if (outcome.ok() && !member_->state_machine().leases().Contains(id))
      outcome = errors::LeaseNotFound();
    for (auto& done : pending.waiters) done(outcome);
  }
  ProposeNext();
}

void LeaseCheckpointer::ProposeNext() {
  std::map<int64_t, Pending> batch;
  {
    absl::MutexLock lock(&mu_);
    if (pending_.empty()) {
      in_flight_ = false;
      return;
    }
    batch.swap(pending_);
  }
  Propose(std::move(batch));
}

}  // namespace leasehold::server
