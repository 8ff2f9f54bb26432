// Which of many etcd key ranges hold a given key, without testing every range: a put watched by a
// few of 10,000 watchers costs a lookup, not 10,000 comparisons (etcd keeps its watchers in a map
// by key and an interval tree for the same reason).
//
// A range is etcd's (key, range_end) pair, read as MvccStore::InRange reads it: an empty range_end
// is the single key, "\0" every key from `key` on, anything else [key, range_end). Ranges fall in
// four kinds, each indexed its own way:
//   - single keys, in a hash map;
//   - prefixes (range_end is the prefix's end, as `--prefix` sends), in a hash map probed with the
//     key's own prefixes of the lengths in use (a handful: one per distinct prefix length);
//   - from-key ranges, in a map ordered by start (all of them with a start at or below the key);
//   - any other range, in a list tested one by one (clients rarely send these).
//
// Values are pointers the caller owns; the same pointer may be indexed under one range only.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "storage/mvcc/mvcc_store.h"

namespace leasehold::server {

enum class KeyRangeKind { kSingle, kPrefix, kFromKey, kOther };
// How KeyRangeIndex indexes the etcd range (key, range_end).
KeyRangeKind KindOfKeyRange(const std::string& key, const std::string& range_end);

template <typename T>
class KeyRangeIndex {
 public:
  void Insert(const std::string& key, const std::string& range_end, T* value) {
    switch (KindOfKeyRange(key, range_end)) {
      case Kind::kSingle:
        singles_[key].insert(value);
        break;
      case Kind::kPrefix: {
        auto [bucket, created] = prefixes_.try_emplace(key);
        if (created) ++prefix_lengths_[key.size()];
        bucket->second.insert(value);
        break;
      }
      case Kind::kFromKey:
        from_key_.emplace(key, value);
        break;
      case Kind::kOther:
        others_.push_back(Other{key, range_end, value});
        break;
    }
    ++size_;
  }

  // Removes `value`, indexed under the same (key, range_end). Returns false when it was not there.
  bool Erase(const std::string& key, const std::string& range_end, T* value) {
    bool erased = false;
    switch (KindOfKeyRange(key, range_end)) {
      case Kind::kSingle:
        erased = EraseFromBucket(singles_, key, value);
        break;
      case Kind::kPrefix:
        erased = EraseFromBucket(prefixes_, key, value);
        if (erased && !prefixes_.contains(key) && --prefix_lengths_[key.size()] == 0) {
          prefix_lengths_.erase(key.size());
        }
        break;
      case Kind::kFromKey:
        for (auto [it, end] = from_key_.equal_range(key); it != end; ++it) {
          if (it->second == value) {
            from_key_.erase(it);
            erased = true;
            break;
          }
        }
        break;
      case Kind::kOther:
        for (auto& other : others_) {
          if (other.value == value && other.key == key && other.range_end == range_end) {
            other = std::move(others_.back());
            others_.pop_back();
            erased = true;
            break;
          }
        }
        break;
    }
    if (erased) --size_;
    return erased;
  }

  // Calls `visit(T*)` once for every value whose range holds `key`, in no particular order.
  template <typename Visit>
  void ForEachHolding(std::string_view key, Visit&& visit) const {
    if (auto it = singles_.find(absl::string_view(key.data(), key.size())); it != singles_.end()) {
      for (T* value : it->second) visit(value);
    }
    for (const auto& [length, count] : prefix_lengths_) {
      if (length > key.size()) break;
      if (auto it = prefixes_.find(absl::string_view(key.data(), length)); it != prefixes_.end()) {
        for (T* value : it->second) visit(value);
      }
    }
    for (auto it = from_key_.begin(); it != from_key_.end() && it->first <= key; ++it)
      visit(it->second);
    for (const auto& other : others_) {
      if (storage::MvccStore::InRange(key, other.key, other.range_end)) visit(other.value);
    }
  }

  size_t size() const { return size_; }

 private:
  using Kind = KeyRangeKind;
  struct Other {
    std::string key;
    std::string range_end;
    T* value;
  };
  using Buckets = absl::flat_hash_map<std::string, absl::flat_hash_set<T*>>;

  static bool EraseFromBucket(Buckets& buckets, const std::string& key, T* value) {
    auto it = buckets.find(key);
    if (it == buckets.end() || it->second.erase(value) == 0) return false;
    if (it->second.empty()) buckets.erase(it);
    return true;
  }

  Buckets singles_;
  Buckets prefixes_;
  std::map<size_t, int> prefix_lengths_;  // length -> how many distinct prefixes of that length
  std::multimap<std::string, T*, std::less<>> from_key_;
  std::vector<Other> others_;
  size_t size_ = 0;
};

}  // namespace leasehold::server
