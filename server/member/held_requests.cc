#include "server/member/held_requests.h"

#include <utility>

#include "common/etcd_errors.h"

namespace leasehold::server {

bool HeldRequests::RoomFor(size_t bytes) const {
  return size() < kMaxRequests && bytes_ + bytes <= kMaxBytes;
}

void HeldRequests::Hold(PendingProposal proposal, size_t bytes) {
  bytes_ += bytes;
  held_.proposals.push_back(std::move(proposal));
}

void HeldRequests::Hold(PendingConfChange change) {
  held_.conf_changes.push_back(std::move(change));
}

void HeldRequests::Hold(PendingRead read) { held_.reads.push_back(std::move(read)); }

void HeldRequests::MoveAhead(Inbox& inbox, AppliedGroup* dropped) {
  if (size() == 0) return;
  DropProposals(/*now_ms=*/0, dropped);  // only those whose callers have gone
  bytes_ = 0;
  auto ahead = [](auto& held, auto& incoming) {
    for (auto& x : incoming) held.push_back(std::move(x));
    incoming = std::move(held);
    held.clear();
  };
  ahead(held_.proposals, inbox.proposals);
  ahead(held_.conf_changes, inbox.conf_changes);
  ahead(held_.reads, inbox.reads);
}

void HeldRequests::DropProposals(int64_t now_ms, AppliedGroup* group) {
  std::erase_if(held_.proposals, [&](PendingProposal& p) {
    const bool abandoned = p.abandoned && p.abandoned();
    if (!abandoned && p.deadline_ms > now_ms) return false;
    bytes_ -= p.entry.ByteSizeLong();
    group->completions.emplace_back(
        std::move(p.done),
        storage::ApplyResult::Error(abandoned ? errors::RequestCancelled() : errors::NoLeader()));
    return true;
  });
}

void HeldRequests::Expire(int64_t now_ms, AppliedGroup* group) {
  DropProposals(now_ms, group);
  auto expire = [now_ms, group](auto& held) {
    std::erase_if(held, [&](auto& x) {
      if (x.deadline_ms > now_ms) return false;
      group->status_completions.emplace_back(std::move(x.done), errors::NoLeader());
      return true;
    });
  };
  expire(held_.conf_changes);
  expire(held_.reads);
}

}  // namespace leasehold::server
