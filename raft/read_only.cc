// ReadOnly implementation.
#include "raft/read_only.h"

#include "raft/check.h"

namespace leasehold::raft {

void ReadOnly::Add(uint64_t commit_index, uint64_t from, const std::string& context) {
  if (pending_.contains(context)) return;
  pending_[context] = PendingRead{commit_index, from, context, {}};
  queue_.push_back(context);
}

const std::set<uint64_t>* ReadOnly::RecvAck(uint64_t from, const std::string& context) {
  auto it = pending_.find(context);
  if (it == pending_.end()) return nullptr;
  it->second.acks.insert(from);
  return &it->second.acks;
}

std::vector<PendingRead> ReadOnly::Advance(const std::string& context) {
  std::vector<PendingRead> out;
  if (!pending_.contains(context)) return out;
  while (!queue_.empty()) {
    std::string ctx = std::move(queue_.front());
    queue_.pop_front();
    auto it = pending_.find(ctx);
    RAFT_CHECK(it != pending_.end());
    out.push_back(std::move(it->second));
    pending_.erase(it);
    if (ctx == context) break;
  }
  return out;
}

std::string ReadOnly::LastPendingContext() const {
  return queue_.empty() ? std::string() : queue_.back();
}

void ReadOnly::Reset() {
  pending_.clear();
  queue_.clear();
}

}  // namespace leasehold::raft
