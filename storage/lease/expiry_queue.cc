#include "storage/lease/expiry_queue.h"

#include <algorithm>
#include <utility>

namespace leasehold::storage {

void ExpiryQueue::Push(int64_t id, int64_t expiry_ms) {
  heap_.push_back({expiry_ms, id});
  std::push_heap(heap_.begin(), heap_.end(), After);
}

void ExpiryQueue::Pop() {
  std::pop_heap(heap_.begin(), heap_.end(), After);
  heap_.pop_back();
}

void ExpiryQueue::Rebuild(std::vector<Item> items) {
  heap_ = std::move(items);
  std::make_heap(heap_.begin(), heap_.end(), After);
}

void ExpiryQueue::Clear() {
  heap_.clear();
  heap_.shrink_to_fit();
}

}  // namespace leasehold::storage
