// A min-heap of (expiry time, lease id) entries whose owner keeps each lease's current expiry, so
// that the queue needs no index of its own (an id -> heap slot hash took twice the heap's memory
// for a million leases). A renewal pushes a new entry and leaves the old one behind; an entry is
// current while the owner still gives its lease that expiry, and stale ones are dropped as they
// surface at the top. The owner rebuilds the queue from its leases when stale entries outnumber
// them. Push and pop are O(log n), amortised; the soonest expiry is O(1) once stale entries are
// dropped. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace leasehold::storage {

class ExpiryQueue {
 public:
  struct Item {
    int64_t expiry_ms;
    int64_t id;
  };

  // Queues `id` to expire at `expiry_ms`; an earlier entry for it becomes stale once the owner's
  // expiry for it changes.
  void Push(int64_t id, int64_t expiry_ms);
  // The soonest current entry, after dropping the stale ones ahead of it. `current(id)` returns the
  // owner's expiry for `id`, or nullopt when it no longer queues `id`.
  template <typename Current>
  const Item* Top(const Current& current);
  // Removes the entry Top() returned. Precondition: Top() returned one and nothing was pushed
  // since.
  void Pop();
  // Replaces every entry with `items` (one per queued lease).
  void Rebuild(std::vector<Item> items);
  // Entries held, current or stale.
  size_t size() const { return heap_.size(); }
  void Clear();

 private:
  // A min-heap through std::push_heap and friends, which build max-heaps.
  static bool After(const Item& a, const Item& b) {
    return a.expiry_ms != b.expiry_ms ? a.expiry_ms > b.expiry_ms : a.id > b.id;
  }

  std::vector<Item> heap_;
};

template <typename Current>
const ExpiryQueue::Item* ExpiryQueue::Top(const Current& current) {
  while (!heap_.empty()) {
    const Item& top = heap_.front();
    const std::optional<int64_t> expiry = current(top.id);
    if (expiry && *expiry == top.expiry_ms) return &top;
    Pop();
  }
  return nullptr;
}

}  // namespace leasehold::storage
