#include "storage/lease/lease_collection.h"

#include <algorithm>
#include <utility>

namespace leasehold::storage {

LeaseCollection::AttachedKeys& LeaseCollection::AttachedKeys::operator=(
    AttachedKeys&& other) noexcept {
  if (this != &other) {
    delete set();
    bits_ = std::exchange(other.bits_, 0);
  }
  return *this;
}

LeaseCollection::AttachedKeys::~AttachedKeys() { delete set(); }

void LeaseCollection::AttachedKeys::Insert(const std::string* key) {
  if (bits_ == 0) {
    bits_ = reinterpret_cast<uintptr_t>(key);
    return;
  }
  if (const std::string* only = single(); only != nullptr) {
    if (only == key) return;
    auto* keys = new Set{only};
    bits_ = reinterpret_cast<uintptr_t>(keys) + kSetTag;
  }
  set()->insert(key);
}

void LeaseCollection::AttachedKeys::Erase(const std::string* key) {
  Set* keys = set();
  if (keys == nullptr) {
    if (single() == key) bits_ = 0;
    return;
  }
  keys->erase(key);
  if (keys->empty()) {
    delete keys;
    bits_ = 0;
  }
}

size_t LeaseCollection::AttachedKeys::size() const {
  if (Set* keys = set()) return keys->size();
  return bits_ == 0 ? 0 : 1;
}

std::vector<std::string> LeaseCollection::AttachedKeys::Sorted() const {
  Set* keys = set();
  if (keys == nullptr) {
    if (bits_ == 0) return {};
    return {*single()};
  }
  std::vector<std::string> sorted;
  sorted.reserve(keys->size());
  for (const std::string* key : *keys) sorted.push_back(*key);
  return sorted;
}

bool LeaseCollection::Contains(int64_t id) const {
  absl::MutexLock lock(&mu_);
  return lease_map_.contains(id);
}

void LeaseCollection::Grant(int64_t id, int64_t ttl_seconds, int64_t deadline_ms,
                            int64_t remaining_seconds) {
  absl::MutexLock lock(&mu_);
  Lease& lease = lease_map_[id];
  lease.ttl_seconds = ttl_seconds;
  lease.deadline_ms = deadline_ms;
  if (remaining_seconds > 0) {
    first_terms_[id] = remaining_seconds;
  } else if (!first_terms_.empty()) {
    first_terms_.erase(id);
  }
  if (primary_) {
    lease.queued_ms = deadline_ms;
    expiry_.Push(id, deadline_ms);
    DropStaleEntriesLocked();
  }
  expired_.erase(id);
}

std::vector<std::string> LeaseCollection::Revoke(int64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = lease_map_.find(id);
  if (it == lease_map_.end()) return {};
  std::vector<std::string> keys = it->second.keys.Sorted();
  lease_map_.erase(it);  // before item_map_'s entries, which its key set points at
  for (const std::string& key : keys) item_map_.erase(key);
  if (!first_terms_.empty()) first_terms_.erase(id);
  renewed_.erase(id);
  expired_.erase(id);
  if (primary_) DropStaleEntriesLocked();  // its queue entry is stale now
  return keys;
}

void LeaseCollection::Attach(int64_t id, const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto lease = lease_map_.find(id);
  if (lease == lease_map_.end()) return;
  auto [item, inserted] = item_map_.try_emplace(key, id);
  if (!inserted && item->second != id) {
    // A key belongs to one lease at a time: it leaves the other lease's set.
    if (auto other = lease_map_.find(item->second); other != lease_map_.end()) {
      other->second.keys.Erase(&item->first);
    }
    item->second = id;
  }
  lease->second.keys.Insert(&item->first);
}

void LeaseCollection::Detach(int64_t id, const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto item = item_map_.find(key);
  if (item == item_map_.end() || item->second != id) return;
  if (auto lease = lease_map_.find(id); lease != lease_map_.end()) {
    lease->second.keys.Erase(&item->first);
  }
  item_map_.erase(item);
}

void LeaseCollection::Checkpoint(int64_t id, int64_t deadline_ms) {
  absl::MutexLock lock(&mu_);
  auto it = lease_map_.find(id);
  if (it == lease_map_.end()) return;
  Lease& lease = it->second;
  lease.deadline_ms = std::max(lease.deadline_ms, deadline_ms);
  if (!primary_) return;
  // A checkpoint applied after this member took over (one requested before a leader change, say)
  // still binds it: the promise it carries was acknowledged to a client.
  if (auto popped = expired_.find(id); popped != expired_.end()) {
    if (popped->second >= deadline_ms) return;
    expired_.erase(popped);  // not expired after all: its revocation will not take effect
  } else if (lease.queued_ms >= deadline_ms) {
    return;
  }
  QueueLocked(id, lease, deadline_ms);
}

std::optional<std::pair<int64_t, int64_t>> LeaseCollection::Record(int64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = lease_map_.find(id);
  if (it == lease_map_.end()) return std::nullopt;
  return std::make_pair(it->second.ttl_seconds, it->second.deadline_ms);
}

int64_t LeaseCollection::LeaseOfKey(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = item_map_.find(key);
  return it == item_map_.end() ? 0 : it->second;
}

void LeaseCollection::Clear() {
  absl::MutexLock lock(&mu_);
  lease_map_.clear();  // before item_map_, which its key sets point at
  item_map_.clear();
  first_terms_.clear();
  primary_ = false;
  expiry_.Clear();
  renewed_.clear();
  expired_.clear();
}

void LeaseCollection::Promote(int64_t extend_ms, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  primary_ = true;
  expiry_.Clear();
  renewed_.clear();
  expired_.clear();
  for (auto& [id, lease] : lease_map_) {
    int64_t deadline_ms = lease.deadline_ms;
    if (deadline_ms == 0) {
      auto first_term = first_terms_.find(id);
      deadline_ms =
          now_ms +
          (first_term != first_terms_.end() ? first_term->second : lease.ttl_seconds) * 1000;
    }
    lease.queued_ms = deadline_ms + extend_ms;
  }
  RebuildQueueLocked();
}

void LeaseCollection::Demote() {
  absl::MutexLock lock(&mu_);
  primary_ = false;
  expiry_.Clear();
  renewed_.clear();
  expired_.clear();
}

bool LeaseCollection::is_primary() const {
  absl::MutexLock lock(&mu_);
  return primary_;
}

int64_t LeaseCollection::ExpiryLocked(int64_t id, const Lease& lease) const {
  if (!primary_) return lease.deadline_ms;
  if (auto it = expired_.find(id); it != expired_.end()) return it->second;
  return lease.queued_ms;
}

void LeaseCollection::QueueLocked(int64_t id, Lease& lease, int64_t at_ms) {
  if (lease.queued_ms == at_ms) return;  // already queued then
  lease.queued_ms = at_ms;
  expiry_.Push(id, at_ms);
  DropStaleEntriesLocked();
}

void LeaseCollection::DropStaleEntriesLocked() {
  // Amortised O(1) per push or revocation: a rebuild costs O(leases) and follows at least as many
  // pushes or revocations since the last one.
  if (expiry_.size() > 2 * lease_map_.size() + 1024) RebuildQueueLocked();
}

void LeaseCollection::RebuildQueueLocked() {
  std::vector<ExpiryQueue::Item> items;
  items.reserve(lease_map_.size());
  for (const auto& [id, lease] : lease_map_) items.push_back({lease.queued_ms, id});
  expiry_.Rebuild(std::move(items));
}

int64_t LeaseCollection::Renew(int64_t id, int64_t now_ms, int64_t* replicated_deadline_ms) {
  absl::MutexLock lock(&mu_);
  auto it = lease_map_.find(id);
  if (it == lease_map_.end() || !primary_) return 0;
  if (replicated_deadline_ms != nullptr) *replicated_deadline_ms = it->second.deadline_ms;
  if (ExpiryLocked(id, it->second) < now_ms) return 0;
  QueueLocked(id, it->second, now_ms + it->second.ttl_seconds * 1000);
  renewed_.insert(id);
  return it->second.ttl_seconds;
}

std::vector<int64_t> LeaseCollection::PopExpired(int64_t now_ms, size_t max_count, size_t max_keys,
                                                 int64_t retry_ms) {
  absl::MutexLock lock(&mu_);
  std::vector<int64_t> expired;
  size_t keys = 0;
  Lease* lease = nullptr;
  auto queued_at = [&](int64_t id) -> std::optional<int64_t> {
    auto it = lease_map_.find(id);
    if (it == lease_map_.end()) return std::nullopt;
    lease = &it->second;
    return lease->queued_ms;
  };
  while (expired.size() < max_count && (expired.empty() || keys < max_keys)) {
    const ExpiryQueue::Item* top = expiry_.Top(queued_at);
    if (top == nullptr || top->expiry_ms >= now_ms) break;
    const ExpiryQueue::Item item = *top;  // `lease` is its lease: the last one queued_at found
    expiry_.Pop();
    expired.push_back(item.id);
    keys += lease->keys.size();
    // Popped again (a retry) it keeps the expiry it first had.
    expired_.try_emplace(item.id, item.expiry_ms);
    renewed_.erase(item.id);
    QueueLocked(item.id, *lease, now_ms + retry_ms);
  }
  return expired;
}

std::vector<std::pair<int64_t, int64_t>> LeaseCollection::TakeCheckpoints(int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<int64_t, int64_t>> out;
  out.reserve(renewed_.size());
  for (int64_t id : renewed_) {
    if (auto it = lease_map_.find(id); it != lease_map_.end())
      out.emplace_back(id, std::max<int64_t>(0, it->second.queued_ms - now_ms));
  }
  renewed_.clear();
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<LeaseCollection::TimeToLive> LeaseCollection::Lookup(int64_t id, int64_t now_ms,
                                                                   bool with_keys) const {
  absl::MutexLock lock(&mu_);
  auto it = lease_map_.find(id);
  if (it == lease_map_.end()) return std::nullopt;
  TimeToLive ttl;
  ttl.granted_ttl_seconds = it->second.ttl_seconds;
  // Whole seconds, truncated, as etcd's TTL. Our clocks count milliseconds: a read in the very
  // millisecond of the grant or renewal would show the full TTL, where etcd's nanosecond clock has
  // always moved on (a fresh 10 s lease reads 9), so time left counts as a hair under what it says.
  const int64_t left_ms = ExpiryLocked(id, it->second) - now_ms;
  ttl.remaining_seconds = (left_ms > 0 ? left_ms - 1 : left_ms) / 1000;
  if (with_keys) ttl.keys = it->second.keys.Sorted();
  return ttl;
}

std::vector<int64_t> LeaseCollection::Ids() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<int64_t, int64_t>> by_expiry;
  by_expiry.reserve(lease_map_.size());
  for (const auto& [id, lease] : lease_map_) by_expiry.emplace_back(ExpiryLocked(id, lease), id);
  std::sort(by_expiry.begin(), by_expiry.end());
  std::vector<int64_t> ids;
  ids.reserve(by_expiry.size());
  for (const auto& entry : by_expiry) ids.push_back(entry.second);
  return ids;
}

size_t LeaseCollection::size() const {
  absl::MutexLock lock(&mu_);
  return lease_map_.size();
}

}  // namespace leasehold::storage
