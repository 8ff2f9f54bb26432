// The multi-version key-value store: every change gets a revision (main, sub); the latest state of
// each key lives in memory (an ordered index with its change history) and every version, including
// delete tombstones, is persisted in the engine so reads at past revisions and watches can be
// served until a compaction removes them. Revision numbering matches etcd's: an empty store is at
// revision 1 and each write transaction that changes anything advances it by one.
//
// Not thread-safe: the state machine serialises writers and guards readers with its own lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mvccpb/kv.pb.h"
#include "rocksdb/write_batch.h"
#include "storage/backend/engine.h"
#include "storage/backend/revision.h"

namespace leasehold::storage {

// One change of a key, its revision packed into 12 bytes (`sub` counts the changes of one
// transaction or one lease's revocation, never near 2^32), so that a change takes 16 bytes and a
// key's first change fits inside its record instead of a heap block of its own.
struct KeyChange {
  KeyChange(Revision rev, bool tombstone)
      : main(rev.main), sub(static_cast<uint32_t>(rev.sub)), tombstone(tombstone) {}
  Revision rev() const { return {main, sub}; }

  int64_t main;
  uint32_t sub;
  bool tombstone;
};

// One key: its history (ascending) and, when it exists now, its latest version.
struct KeyRecord {
  absl::InlinedVector<KeyChange, 1> changes;
  bool live = false;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
  std::string value;
};
// With the key and the map's node header, 160 bytes: one of jemalloc's size classes.
static_assert(sizeof(KeyRecord) <= 96);

struct RangeOptions {
  int64_t revision = 0;  // 0 or less: the current revision
  int64_t limit = 0;     // 0: no limit. Counting continues past the limit.
  bool count_only = false;
};

struct RangeResult {
  std::vector<mvccpb::KeyValue> kvs;  // in key order
  int64_t count = 0;                  // keys in the range, regardless of limit
};

class MvccStore {
 public:
  // Not copyable: live_ and by_key_ point into index_.
  MvccStore(const MvccStore&) = delete;
  MvccStore& operator=(const MvccStore&) = delete;
  explicit MvccStore(Engine* engine) : engine_(engine) {}

  // Rebuilds the in-memory index from the engine. `on_live_key` is called for every key that exists
  // at the current revision (the caller re-attaches leases from it). DataLoss on a malformed
  // record.
  [[nodiscard]] absl::Status Restore(
      const std::function<void(const std::string& key, const KeyRecord&)>& on_live_key);

  int64_t revision() const { return current_; }
  int64_t compacted_revision() const { return compacted_ < 0 ? 0 : compacted_; }
  size_t live_key_count() const { return live_.size(); }

  // Keys in [key, range_end): an empty range_end selects `key` alone, "\0" selects every key >=
  // key. OutOfRange (etcd's compacted / future revision errors) for revisions outside the kept
  // history.
  [[nodiscard]] absl::StatusOr<RangeResult> Range(std::string_view key, std::string_view range_end,
                                                  const RangeOptions& options) const;

  // The live record of `key`, or nullptr.
  const KeyRecord* FindLive(std::string_view key) const;
  // Calls `fn` for each live key in the range at the current revision, in key order.
  void ForEachLive(std::string_view key, std::string_view range_end,
                   const std::function<void(const std::string&, const KeyRecord&)>& fn) const;

  // Appends the events of revisions [from, to] on keys in [key, range_end), oldest first, each with
  // its previous version when `with_prev_kv`. OutOfRange (compacted) when `from` is below the
  // compacted revision. Reads the engine: call only for revisions already flushed.
  [[nodiscard]] absl::Status History(int64_t from, int64_t to, std::string_view key,
                                     std::string_view range_end, bool with_prev_kv,
                                     std::vector<mvccpb::Event>* out) const;

  // True when `key` is in [start, range_end) with etcd's conventions for an empty and a "\0" end.
  static bool InRange(std::string_view key, std::string_view start, std::string_view range_end);

  // Removes history older than `revision` (the latest version at or below it is kept for reads at
  // `revision`). OutOfRange when already compacted past it or when it is in the future. Adds the
  // number of versions removed to `*versions_deleted` when given.
  [[nodiscard]] absl::Status Compact(int64_t revision, rocksdb::WriteBatch* batch,
                                     uint64_t* versions_deleted = nullptr);

  static mvccpb::KeyValue ToKeyValue(const std::string& key, const KeyRecord& record);

  // Versions are written to a batch that the state machine flushes once per group of entries; until
  // then they are read from here. Call after the batch holding them has been written.
  void ClearUnflushed() { unflushed_.clear(); }

  // A write transaction: all its changes share main revision revision()+1 and become visible to
  // reads (including the transaction's own) as they are made. Call Finish() once at the end.
  class WriteTxn {
   public:
    // When `events` is given, every change appends its watch event (with the previous version).
    WriteTxn(MvccStore* store, rocksdb::WriteBatch* batch,
             std::vector<mvccpb::Event>* events = nullptr)
        : store_(store), batch_(batch), events_(events), main_(store->current_ + 1) {}
    // Returns the previous version when the key existed.
    std::optional<mvccpb::KeyValue> Put(const std::string& key, const std::string& value,
                                        int64_t lease);
    // Deletes every live key in the range in key order; returns their previous versions.
    std::vector<mvccpb::KeyValue> DeleteRange(std::string_view key, std::string_view range_end);
    // The revision a read inside this transaction observes.
    int64_t revision() const { return next_sub_ > 0 ? main_ : main_ - 1; }
    bool changed() const { return next_sub_ > 0; }
    void Finish();

   private:
    MvccStore* store_;
    rocksdb::WriteBatch* batch_;
    std::vector<mvccpb::Event>* events_;
    int64_t main_;
    int64_t next_sub_ = 0;
  };

 private:
  // Every record (live or only history) in the range, in key order; `fn` returns false to stop.
  template <typename Fn>
  void ForEachRecord(std::string_view key, std::string_view range_end, Fn&& fn) const;
  // Live records only, in key order, without stepping over the deleted keys kept for history.
  template <typename Fn>
  void ForEachLiveRecord(std::string_view key, std::string_view range_end, Fn&& fn) const;
  [[nodiscard]] absl::StatusOr<mvccpb::KeyValue> LoadVersion(const Revision& rev) const;

  void RecordVersion(const Revision& rev, std::string encoded, rocksdb::WriteBatch* batch);

  // index_'s elements, and the ways to find one by its key without copying it into another index.
  using Entry = std::pair<const std::string, KeyRecord>;
  struct EntryHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return absl::Hash<std::string_view>{}(key); }
    size_t operator()(const Entry* entry) const { return (*this)(std::string_view(entry->first)); }
  };
  struct EntryEq {
    using is_transparent = void;
    static std::string_view KeyOf(std::string_view key) { return key; }
    static std::string_view KeyOf(const Entry* entry) { return entry->first; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return KeyOf(a) == KeyOf(b);
    }
  };
  struct EntryLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return EntryEq::KeyOf(a) < EntryEq::KeyOf(b);
    }
  };

  Engine* engine_;
  std::map<std::string, KeyRecord, std::less<>> index_;
  // The secondary indexes hold pointers to index_'s elements (map nodes never move): one word per
  // key, where a copy of the key's view and a record pointer took three.
  //
  // The live subset of index_. Current-revision reads walk this, so keys created and deleted over
  // and over (lock keys, sessions) cost them nothing. A B-tree, so those walks stay within few
  // cache lines; single keys are found through by_key_ instead.
  absl::btree_set<Entry*, EntryLess> live_;
  // Every record of index_ by key, for the point lookups of puts, deletes and gets: the ordered
  // indexes compare the key at each level, each comparison a cache miss on another node's key.
  absl::flat_hash_set<Entry*, EntryHash, EntryEq> by_key_;
  absl::flat_hash_map<std::string, std::string> unflushed_;  // revision key -> encoded version
  int64_t current_ = 1;
  // -1 until the first compaction: as in etcd, a store never compacted takes a compaction to 0
  // (once).
  int64_t compacted_ = -1;
};

}  // namespace leasehold::storage
