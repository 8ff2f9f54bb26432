// A min-heap of (expiry time, lease id) with an index from id to heap slot, so that insert, update,
// remove and pop are all O(log n) and the soonest expiry is O(1). Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace leasehold::storage {

class ExpiryQueue {
 public:
  struct Item {
    int64_t expiry_ms;
    int64_t id;
  };

  // Inserts `id`, or moves it to `expiry_ms` when already queued.
  void Upsert(int64_t id, int64_t expiry_ms);
  // Returns false when `id` was not queued.
  bool Remove(int64_t id);
  std::optional<int64_t> ExpiryOf(int64_t id) const;
  // Precondition: !empty().
  const Item& Top() const { return heap_.front(); }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  void Clear();
  // Room for `count` ids, so that filling the queue at once leaves no outgrown arrays behind.
  void Reserve(size_t count);

 private:
  static bool Before(const Item& a, const Item& b) {
    return a.expiry_ms != b.expiry_ms ? a.expiry_ms < b.expiry_ms : a.id < b.id;
  }
  void SiftUp(size_t slot);
  void SiftDown(size_t slot);
  void Place(size_t slot, const Item& item);

  std::vector<Item> heap_;
  absl::flat_hash_map<int64_t, size_t> slot_of_;  // invariant: heap_[slot_of_[id]].id == id
};

}  // namespace leasehold::storage
