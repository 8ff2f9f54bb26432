// The replicated state machine: the MVCC store and the LeaseCollection, changed only by applying
// log entries in order. Apply is deterministic: it reads no clock and no randomness (time and ids
// come inside the entry), so every member that applies the same log reaches the same state.
//
// Thread-safety: Apply is called by one thread (the apply loop). Reads (Range, revision, ...) may
// come from any thread; they take a shared lock and see only fully applied entries.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "etcdserverpb/rpc.pb.h"
#include "leasehold/internal.pb.h"
#include "storage/apply/apply_observer.h"
#include "storage/auth/auth_table.h"
#include "storage/backend/engine.h"
#include "storage/blob/blob_ops.h"
#include "storage/blob/blob_table.h"
#include "storage/cluster/alarm_table.h"
#include "storage/cluster/member_table.h"
#include "storage/lease/lease_collection.h"
#include "storage/mvcc/mvcc_store.h"

namespace leasehold::storage {

struct ApplyResult {
  absl::Status status;                    // etcd's error for a rejected request
  internalpb::InternalResponse response;  // header.revision filled; ids left for the server
  std::vector<mvccpb::Event> events;      // watch events of the changes, in revision order

  static ApplyResult Error(absl::Status status) {
    ApplyResult result;
    result.status = std::move(status);
    return result;
  }
};

class StateMachine {
 public:
  struct Options {
    int64_t min_lease_ttl_seconds = 2;
    ApplyObserver* observer = nullptr;  // not owned; null: nobody is told
  };

  // Restores the store and the leases from `engine` (not owned; must outlive this object).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<StateMachine>> Open(Engine* engine,
                                                                          const Options& options);

  // Index of the last applied entry (the consistent index): entries at or below it are never
  // applied again, which makes replay after a restart exact.
  uint64_t applied_index() const;

  // Applies the entry at log `index` (which must already be durable). Its effects are visible to
  // readers at once and reach the engine, unsynced, at the next FlushApplied(): apply a group of
  // entries, then flush once. Precondition: index > applied_index().
  ApplyResult Apply(uint64_t index, const internalpb::InternalRequest& entry);
  // Applies a committed membership change at log `index`; `conf_state` is the Raft membership after
  // it, persisted with the applied index so a restart resumes with exactly this membership.
  // Precondition: index > applied_index().
  void ApplyConfChange(uint64_t index, const raftpb::ConfChange& change,
                       const raftpb::ConfState& conf_state);
  // Writes everything applied since the last flush in one engine write. A storage failure here
  // would leave memory and disk apart, so it aborts the process.
  void FlushApplied();

  // --- Snapshots (called by the apply thread only). ---
  // Serialises every replicated record, as of the applied index (which must be flushed), into
  // `out` (an internalpb.StateSnapshot).
  [[nodiscard]] absl::Status Dump(std::string* out) const;
  // Adds to `batch` what replaces this member's replicated state with the snapshot's, applied up to
  // `index`. Write the batch, then call ReloadFromEngine(). InvalidArgument for unreadable data.
  [[nodiscard]] absl::Status PrepareInstall(const std::string& data, uint64_t index,
                                            rocksdb::WriteBatch* batch) const;
  // Rebuilds the in-memory state (versions index, leases, members, applied index) from the engine.
  [[nodiscard]] absl::Status ReloadFromEngine();

  // A serializable read of the current state (or of a past revision).
  [[nodiscard]] absl::StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& request) const;
  // A transaction whose operations are all ranges (nested ones too), answered from the current
  // state without a log entry — as etcd serves read-only transactions.
  static bool IsReadOnly(const etcdserverpb::TxnRequest& request);
  [[nodiscard]] absl::StatusOr<etcdserverpb::TxnResponse> ReadOnlyTxn(
      const etcdserverpb::TxnRequest& request) const;
  int64_t revision() const;
  int64_t compacted_revision() const;
  size_t live_key_count() const;
  // Watch events of flushed revisions [from, to]; see MvccStore::History.
  [[nodiscard]] absl::Status History(int64_t from, int64_t to, const std::string& key,
                                     const std::string& range_end, bool with_prev_kv,
                                     std::vector<mvccpb::Event>* out) const;

  // Maintenance's hashes (state_hash.cc). Members holding the same replicated state agree on them;
  // the values are not etcd's, whose hashes cover its own file format.
  struct KvHash {
    uint32_t hash = 0;
    int64_t revision = 0;          // the revision hashed
    int64_t compact_revision = 0;  // the store's compacted revision
  };
  // etcd's HashKV: every version and tombstone kept at or below `revision` (0 or less: the current
  // one). OutOfRange with etcd's errors for a revision at or below the compacted one, or above the
  // current one. Reads a consistent view taken once everything applied is flushed, without holding
  // up the apply thread while it hashes.
  [[nodiscard]] absl::StatusOr<KvHash> HashKv(int64_t revision) const;
  // etcd's Hash: every replicated record (keys, leases, members, auth, alarms, ...), as of now.
  [[nodiscard]] absl::StatusOr<uint32_t> HashAll() const;

  // --- The Azure Blob adapter's table (see blob_ops.h). ---
  // Answers a blob read as of `now_ms` from the current state.
  internalpb::BlobResponse ReadBlob(const internalpb::BlobRequest& request, int64_t now_ms) const;
  // Runs `fn` with the table under the read lock (listings); `fn` must not call back in.
  void ReadBlobTable(const std::function<void(const BlobTable&)>& fn) const;
  // Whether core lease `id` times a blob or container lease: such leases are not the etcd API's
  // to list, renew or revoke.
  bool IsBlobCoreLease(int64_t id) const;

  const MemberTable& members() const { return members_; }
  // Raised alarms. While NOSPACE is raised, entries that would grow the store (Put, a Txn with
  // writes, LeaseGrant) are refused with etcd's "database space exceeded", as etcd's capped applier
  // refuses them; deletes, compactions and revokes still apply, so space can be reclaimed. While
  // CORRUPT is raised, every change to keys and leases is refused (RefusedWhenCorrupt).
  const AlarmTable& alarms() const { return alarms_; }
  // Whether `entry` grows the store, and so is refused while NOSPACE is raised.
  static bool GrowsStore(const internalpb::InternalRequest& entry);
  // Whether `entry` is refused while a CORRUPT alarm is raised (etcd's: put, delete, transaction,
  // compaction, lease grant and revoke).
  static bool RefusedWhenCorrupt(const internalpb::InternalRequest& entry);
  // etcd's v3 auth: users, roles, the switch. While auth is enabled, an entry made for a client's
  // call (one with a caller) is applied only if its user may make it: reads and writes of the keys
  // it touches (a lease's attached keys included), the root role for compactions and auth changes.
  const AuthTable& auth() const { return auth_; }
  // The same checks for calls answered without the log (OK while auth is disabled): a read-only
  // transaction, and reading every key attached to a lease (LeaseTimeToLive names them).
  [[nodiscard]] absl::Status CheckReadOnlyTxn(const std::string& user,
                                              const etcdserverpb::TxnRequest& txn) const;
  [[nodiscard]] absl::Status CheckLeaseKeysReadable(const std::string& user,
                                                    int64_t lease_id) const;
  LeaseCollection& leases() { return leases_; }
  const LeaseCollection& leases() const { return leases_; }

 private:
  StateMachine(Engine* engine, const Options& options)
      : engine_(engine),
        options_(options),
        observer_(options.observer != nullptr ? options.observer : &no_observer_),
        store_(engine),
        blob_timer_(this) {}

  // Core leases for blob leases: granted and revoked inside the entry being applied.
  class BlobTimer : public CoreLeaseTimer {
   public:
    explicit BlobTimer(StateMachine* sm) : sm_(sm) {}
    int64_t Start(int64_t preferred_id, int64_t now_ms, int64_t deadline_ms) override;
    void Stop(int64_t id) override;

   private:
    StateMachine* sm_;
  };

  [[nodiscard]] absl::Status ApplyPut(MvccStore::WriteTxn& txn,
                                      const etcdserverpb::PutRequest& request,
                                      etcdserverpb::PutResponse* response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyDelete(MvccStore::WriteTxn& txn, const etcdserverpb::DeleteRangeRequest& request,
                   etcdserverpb::DeleteRangeResponse* response) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status ApplyTxn(MvccStore::WriteTxn& txn,
                                      const etcdserverpb::TxnRequest& request,
                                      etcdserverpb::TxnResponse* response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Evaluates the compares (the branch taken at each level, depth first, into `*path`) and checks
  // the chosen operations' preconditions against the current state.
  [[nodiscard]] absl::Status CheckTxnOps(const etcdserverpb::TxnRequest& request,
                                         std::vector<bool>* path) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool EvaluateCompare(const etcdserverpb::Compare& compare) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::StatusOr<etcdserverpb::RangeResponse> RangeLocked(
      const etcdserverpb::RangeRequest& request, int64_t txn_revision) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status ApplyLeaseGrant(const internalpb::InternalRequest& entry,
                                             rocksdb::WriteBatch* batch,
                                             etcdserverpb::LeaseGrantResponse* response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status ApplyLeaseRevoke(int64_t id, rocksdb::WriteBatch* batch,
                                              etcdserverpb::LeaseRevokeResponse* response,
                                              std::vector<mvccpb::Event>* events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyLeaseExpiry(const internalpb::InternalRequest& entry, rocksdb::WriteBatch* batch,
                        std::vector<mvccpb::Event>* events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether lease `id`'s replicated deadline is past `entry`'s time: a leader's decision that it
  // expired was overtaken by a checkpoint of an acknowledged renewal.
  bool RenewedPastDecision(int64_t id, const internalpb::InternalRequest& entry) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void ApplyCheckpoint(const internalpb::InternalRequest& entry, rocksdb::WriteBatch* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PersistLease(int64_t id, rocksdb::WriteBatch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves `key` from lease `from` to lease `to` (either may be 0).
  void MoveKey(const std::string& key, int64_t from, int64_t to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status RestoreLeases();
  // Whether the entry's caller may make it (see auth()).
  [[nodiscard]] absl::Status CheckCaller(const internalpb::InternalRequest& entry) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status CheckTxnCaller(const std::string& user,
                                            const etcdserverpb::TxnRequest& txn) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // `access` to every key attached to lease `id` (none when it has no keys or does not exist).
  [[nodiscard]] absl::Status CheckLeaseKeys(const std::string& user, int64_t id,
                                            Access access) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void ApplyAlarm(const etcdserverpb::AlarmRequest& request, rocksdb::WriteBatch* batch,
                  etcdserverpb::AlarmResponse* response) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Engine* const engine_;
  const Options options_;
  ApplyObserver no_observer_;
  ApplyObserver* const observer_;
  mutable absl::Mutex mu_;
  MvccStore store_ ABSL_GUARDED_BY(mu_);
  LeaseCollection leases_;  // internally synchronised; replicated parts change only under mu_
  MemberTable members_;     // internally synchronised; changes only under mu_
  AlarmTable alarms_;       // internally synchronised; changes only under mu_
  AuthTable auth_;          // internally synchronised; changes only under mu_
  BlobTable blobs_ ABSL_GUARDED_BY(mu_);
  BlobTimer blob_timer_;
  uint64_t applied_index_ ABSL_GUARDED_BY(mu_) = 0;
  rocksdb::WriteBatch unflushed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasehold::storage
