// The LeaseCollection: every lease (lease_map), the lease each key is attached to (item_map), and,
// only while this member is primary, the expiry queue that decides when a lease runs out.
//
// Two kinds of callers:
//  - the state machine, applying committed entries in order (Grant, Revoke, Attach, Detach,
//    Checkpoint). These change replicated state and take time only from the entry.
//  - the primary's request handlers and expiry loop (Renew, PopExpired, TakeCheckpoints, Lookup),
//    which pass in the time they read from their clock.
// Times are wall-clock milliseconds since the Unix epoch, so persisted deadlines survive restarts.
// A lease expires only once the clock is past its deadline's millisecond: the time a grant or
// renewal was stamped with is truncated, so it may be up to 1 ms earlier than when the client sent
// it, and the client counts its TTL from the sending.
//
// Thread-safe: one internal mutex; no method calls out while holding it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "storage/lease/expiry_queue.h"

namespace leasehold::storage {

inline constexpr int64_t kMaxLeaseTtlSeconds = 9'000'000'000;

class LeaseCollection {
 public:
  struct TimeToLive {
    int64_t granted_ttl_seconds = 0;
    int64_t remaining_seconds = 0;  // truncated; zero or negative once expired but not yet revoked
    std::vector<std::string> keys;  // sorted; filled only when asked for
  };

  // --- Replicated state, changed only by the state machine's apply. ---
  bool Contains(int64_t id) const;
  // Precondition: !Contains(id). `deadline_ms` is the grant time plus the TTL; 0 for a restored
  // lease without one, which the first promotion gives `remaining_seconds` (when > 0: etcd's
  // checkpointed remaining TTL) or its whole TTL.
  void Grant(int64_t id, int64_t ttl_seconds, int64_t deadline_ms, int64_t remaining_seconds = 0);
  // Removes the lease and returns its keys in sorted order (the order they are deleted in).
  // Precondition: Contains(id).
  std::vector<std::string> Revoke(int64_t id);
  // Attach/Detach keep item_map and the lease's key set in step; a key attached to another lease
  // leaves that one's set. Unknown ids, and a Detach from a lease the key is not on, are ignored.
  void Attach(int64_t id, const std::string& key);
  void Detach(int64_t id, const std::string& key);
  // Raises the replicated deadline to `deadline_ms` (never lowers it: a deadline some leader
  // promised stays promised); unknown ids are ignored. On the primary the lease then expires no
  // earlier than that, even if it had been popped for revocation (whose LeaseExpiry entry the
  // state machine then skips: see StateMachine's apply of lease_expiry).
  void Checkpoint(int64_t id, int64_t deadline_ms);
  // The replicated (ttl, deadline) of a lease, for persisting it.
  std::optional<std::pair<int64_t, int64_t>> Record(int64_t id) const;
  // The lease a key is attached to, or 0.
  int64_t LeaseOfKey(const std::string& key) const;

  // Forgets every lease (before a snapshot's leases are restored). Leaves the member a follower.
  void Clear();

  // --- Primary only. ---
  // Becomes primary: every lease expires at its replicated deadline plus `extend_ms`, the allowance
  // for renewals the previous primary (or this member before a crash) acknowledged but did not
  // checkpoint. A lease without a deadline (restored from a backup) gets its full TTL from
  // `now_ms`.
  void Promote(int64_t extend_ms, int64_t now_ms);
  // Stops tracking expiry (followers never revoke).
  void Demote();
  bool is_primary() const;
  // Renews `id` to now + TTL. Returns the granted TTL, or 0 when the lease is unknown or has
  // already expired (an expired lease is on its way to revocation and cannot be brought back). When
  // `replicated_deadline_ms` is given, it receives the lease's replicated deadline (the one a new
  // leader would honour), read under the same lock.
  int64_t Renew(int64_t id, int64_t now_ms, int64_t* replicated_deadline_ms = nullptr);
  // Pops leases whose expiry has passed, soonest first, until `max_count` leases or, counting their
  // keys, `max_keys` keys (at least one lease when any is due), and re-queues each at now +
  // `retry_ms`, so a revocation that fails to commit is tried again. A popped lease stays expired
  // (Renew and Lookup see its own expiry, not the retry time) until it is revoked.
  std::vector<int64_t> PopExpired(int64_t now_ms, size_t max_count, size_t max_keys,
                                  int64_t retry_ms);
  // Remaining time of every lease renewed since the last call, for a checkpoint entry.
  std::vector<std::pair<int64_t, int64_t>> TakeCheckpoints(int64_t now_ms);

  // --- Queries. ---
  std::optional<TimeToLive> Lookup(int64_t id, int64_t now_ms, bool with_keys) const;
  // All lease ids, soonest expiry first.
  std::vector<int64_t> Ids() const;
  size_t size() const;

 private:
  // The keys of one lease, in key order, as pointers to item_map_'s keys (its nodes never move, and
  // a key is in a lease's set exactly while item_map_ maps it to that lease), so each key is stored
  // once. Most leases hold none or one key: one is held inline, in the same word as the pointer to
  // a set, which is allocated only for a second key. A million leases with a key each then take no
  // memory here beyond lease_map_'s slots. A B-tree, as a lease with many keys is re-sorted on
  // every put that moves a key to it.
  class AttachedKeys {
   public:
    AttachedKeys() = default;
    AttachedKeys(AttachedKeys&& other) noexcept : bits_(std::exchange(other.bits_, 0)) {}
    AttachedKeys& operator=(AttachedKeys&& other) noexcept;
    ~AttachedKeys();

    void Insert(const std::string* key);
    void Erase(const std::string* key);
    size_t size() const;
    std::vector<std::string> Sorted() const;

   private:
    struct ByContent {
      bool operator()(const std::string* a, const std::string* b) const { return *a < *b; }
    };
    using Set = absl::btree_set<const std::string*, ByContent>;
    // 0: no key; an even value: the one key's address; odd: a Set's address plus one.
    static constexpr uintptr_t kSetTag = 1;
    Set* set() const {
      return (bits_ & kSetTag) ? reinterpret_cast<Set*>(bits_ - kSetTag) : nullptr;
    }
    const std::string* single() const {
      return (bits_ & kSetTag) ? nullptr : reinterpret_cast<const std::string*>(bits_);
    }
    uintptr_t bits_ = 0;
  };
  struct Lease {
    int64_t ttl_seconds = 0;
    int64_t deadline_ms = 0;  // replicated deadline as of the last grant or checkpoint
    // Primary only: when this member next acts on the lease (its expiry, or once popped the time to
    // retry its revocation). The expiry queue's entry for the lease is the one with this time.
    int64_t queued_ms = 0;
    AttachedKeys keys;
  };
  int64_t ExpiryLocked(int64_t id, const Lease& lease) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Primary only: sets `lease.queued_ms` and queues the lease at that time.
  void QueueLocked(int64_t id, Lease& lease, int64_t at_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rebuilds expiry_ from lease_map_ once its stale entries outnumber the leases.
  void DropStaleEntriesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Replaces expiry_'s entries with one per lease, at its queued_ms.
  void RebuildQueueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<int64_t, Lease> lease_map_ ABSL_GUARDED_BY(mu_);
  // A node map: lease_map_'s key sets point at its keys.
  absl::node_hash_map<std::string, int64_t> item_map_ ABSL_GUARDED_BY(mu_);
  // Leases restored without a deadline but with etcd's checkpointed remaining TTL: the first
  // promotion's term in seconds, where it is not the TTL. Rare, so kept out of Lease.
  absl::flat_hash_map<int64_t, int64_t> first_terms_ ABSL_GUARDED_BY(mu_);
  bool primary_ ABSL_GUARDED_BY(mu_) = false;
  // Invariant: empty unless primary_; then each lease has an entry at its queued_ms.
  ExpiryQueue expiry_ ABSL_GUARDED_BY(mu_);
  // Leases popped by PopExpired and not yet revoked, with the expiry they had: their place in
  // expiry_ is only when to try revoking them again. Primary only, as expiry_.
  absl::flat_hash_map<int64_t, int64_t> expired_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> renewed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasehold::storage
