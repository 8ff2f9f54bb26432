#include "server/member.h"

#include <chrono>

#include "storage/etcd_errors.h"

namespace leasehold::server {

Member::Member(MemberConfig config, storage::Engine* engine, storage::StateMachine* state_machine,
               Proposer* proposer)
    : config_(std::move(config)), engine_(engine), state_machine_(state_machine), proposer_(proposer) {
  const uint64_t prefix = (config_.member_id & 0xffff) << 48;
  const uint64_t suffix = (static_cast<uint64_t>(NowUnixMs()) & ((1ULL << 40) - 1)) << 8;
  next_id_ = prefix | suffix;
}

int64_t Member::NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t Member::NextId() {
  for (;;) {
    uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed) & 0x7fffffffffffffffULL;
    if (id != 0) return static_cast<int64_t>(id);
  }
}

void Member::FillHeader(etcdserverpb::ResponseHeader* header) const {
  header->set_cluster_id(config_.cluster_id);
  header->set_member_id(config_.member_id);
  header->set_raft_term(proposer_->term());
  if (header->revision() == 0) header->set_revision(state_machine_->revision());
}

void Member::Submit(internalpb::InternalRequest entry, Proposer::Done done) {
  entry.set_id(static_cast<uint64_t>(NextId()));
  entry.set_time_unix_ms(NowUnixMs());
  if (static_cast<int64_t>(entry.ByteSizeLong()) > config_.max_request_bytes) {
    done(storage::ApplyResult::Error(errors::RequestTooLarge()));
    return;
  }
  proposer_->Propose(std::move(entry), std::move(done));
}

}  // namespace leasehold::server
