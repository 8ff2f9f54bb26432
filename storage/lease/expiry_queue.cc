#include "storage/lease/expiry_queue.h"

namespace leasehold::storage {

void ExpiryQueue::Place(size_t slot, const Item& item) {
  heap_[slot] = item;
  slot_of_[item.id] = slot;
}

void ExpiryQueue::SiftUp(size_t slot) {
  Item item = heap_[slot];
  while (slot > 0) {
    size_t parent = (slot - 1) / 2;
    if (!Before(item, heap_[parent])) break;
    Place(slot, heap_[parent]);
    slot = parent;
  }
  Place(slot, item);
}

void ExpiryQueue::SiftDown(size_t slot) {
  Item item = heap_[slot];
  const size_t n = heap_.size();
  while (true) {
    size_t child = 2 * slot + 1;
    if (child >= n) break;
    if (child + 1 < n && Before(heap_[child + 1], heap_[child])) ++child;
    if (!Before(heap_[child], item)) break;
    Place(slot, heap_[child]);
    slot = child;
  }
  Place(slot, item);
}

void ExpiryQueue::Upsert(int64_t id, int64_t expiry_ms) {
  auto it = slot_of_.find(id);
  if (it == slot_of_.end()) {
    heap_.push_back({expiry_ms, id});
    slot_of_[id] = heap_.size() - 1;
    SiftUp(heap_.size() - 1);
    return;
  }
  size_t slot = it->second;
  const int64_t old = heap_[slot].expiry_ms;
  heap_[slot].expiry_ms = expiry_ms;
  if (expiry_ms < old) {
    SiftUp(slot);
  } else {
    SiftDown(slot);
  }
}

bool ExpiryQueue::Remove(int64_t id) {
  auto it = slot_of_.find(id);
  if (it == slot_of_.end()) return false;
  size_t slot = it->second;
  slot_of_.erase(it);
  Item last = heap_.back();
  heap_.pop_back();
  if (slot == heap_.size()) return true;
  Place(slot, last);
  SiftUp(slot);
  SiftDown(slot_of_[last.id]);
  return true;
}

std::optional<int64_t> ExpiryQueue::ExpiryOf(int64_t id) const {
  auto it = slot_of_.find(id);
  if (it == slot_of_.end()) return std::nullopt;
  return heap_[it->second].expiry_ms;
}

void ExpiryQueue::Clear() {
  heap_.clear();
  slot_of_.clear();
}

void ExpiryQueue::Reserve(size_t count) {
  heap_.reserve(count);
  slot_of_.reserve(count);
}

}  // namespace leasehold::storage
