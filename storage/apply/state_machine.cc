#include "storage/apply/state_machine.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "common/etcd_errors.h"
#include "common/status_macros.h"
#include "storage/backend/raft_log_store.h"

namespace leasehold::storage {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;

// Evaluated before any operation runs: one decision per Txn in depth-first order, so nested
// transactions see the state from before the outer transaction, as etcd evaluates them.
using TxnPath = std::vector<bool>;

template <typename T>
int Sign(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

bool CompareResultHolds(Compare::CompareResult result, int cmp) {
  switch (result) {
    case Compare::EQUAL:
      return cmp == 0;
    case Compare::NOT_EQUAL:
      return cmp != 0;
    case Compare::GREATER:
      return cmp > 0;
    case Compare::LESS:
      return cmp < 0;
    default:
      return false;
  }
}

bool CompareKeyValue(const Compare& c, const mvccpb::KeyValue& kv) {
  int cmp = 0;
  switch (c.target()) {
    case Compare::VALUE:
      cmp = Sign<std::string>(kv.value(), c.value());
      break;
    case Compare::CREATE:
      cmp = Sign(kv.create_revision(), c.create_revision());
      break;
    case Compare::MOD:
      cmp = Sign(kv.mod_revision(), c.mod_revision());
      break;
    case Compare::VERSION:
      cmp = Sign(kv.version(), c.version());
      break;
    case Compare::LEASE:
      cmp = Sign(kv.lease(), c.lease());
      break;
    default:
      return false;
  }
  return CompareResultHolds(c.result(), cmp);
}

void SortKvs(std::vector<mvccpb::KeyValue>* kvs, RangeRequest::SortTarget target, bool descend) {
  auto key_of = [target](const mvccpb::KeyValue& kv) -> std::tuple<int64_t, const std::string*> {
    switch (target) {
      case RangeRequest::VERSION:
        return {kv.version(), nullptr};
      case RangeRequest::CREATE:
        return {kv.create_revision(), nullptr};
      case RangeRequest::MOD:
        return {kv.mod_revision(), nullptr};
      case RangeRequest::VALUE:
        return {0, &kv.value()};
      default:
        return {0, &kv.key()};
    }
  };
  auto less = [&](const mvccpb::KeyValue& a, const mvccpb::KeyValue& b) {
    auto [na, sa] = key_of(a);
    auto [nb, sb] = key_of(b);
    if (sa != nullptr) return descend ? *sb < *sa : *sa < *sb;
    return descend ? nb < na : na < nb;
  };
  std::stable_sort(kvs->begin(), kvs->end(), less);
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateMachine>> StateMachine::Open(Engine* engine,
                                                                 const Options& options) {
  auto sm = std::unique_ptr<StateMachine>(new StateMachine(engine, options));
  RETURN_IF_ERROR(sm->RestoreLeases());
  absl::MutexLock lock(&sm->mu_);
  RETURN_IF_ERROR(sm->store_.Restore([&](const std::string& key, const KeyRecord& record) {
    if (record.lease != 0) sm->leases_.Attach(record.lease, key);
  }));
  RETURN_IF_ERROR(sm->members_.Restore(*engine));
  RETURN_IF_ERROR(sm->alarms_.Restore(*engine));
  RETURN_IF_ERROR(sm->auth_.Restore(*engine));
  RETURN_IF_ERROR(sm->blobs_.Restore(*engine));
  ASSIGN_OR_RETURN(sm->applied_index_, engine->GetMetaU64("ci"));
  return sm;
}

absl::Status StateMachine::RestoreLeases() {
  auto it = engine_->NewIterator();
  for (it->Seek(std::string(1, keys::kLeasePrefix)); it->Valid(); it->Next()) {
    if (it->key().size() == 0 || it->key()[0] != keys::kLeasePrefix) break;
    internalpb::LeaseRecord record;
    if (!record.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return absl::DataLossError("malformed lease record");
    }
    leases_.Grant(record.id(), std::max(record.ttl_seconds(), options_.min_lease_ttl_seconds),
                  record.deadline_unix_ms(), record.remaining_ttl_seconds());
  }
  if (!it->status().ok())
    return absl::DataLossError("lease scan failed: " + it->status().ToString());
  return absl::OkStatus();
}

uint64_t StateMachine::applied_index() const {
  absl::ReaderMutexLock lock(&mu_);
  return applied_index_;
}

int64_t StateMachine::revision() const {
  absl::ReaderMutexLock lock(&mu_);
  return store_.revision();
}

absl::Status StateMachine::History(int64_t from, int64_t to, const std::string& key,
                                   const std::string& range_end, bool with_prev_kv,
                                   std::vector<mvccpb::Event>* out) const {
  absl::ReaderMutexLock lock(&mu_);
  return store_.History(from, to, key, range_end, with_prev_kv, out);
}

int64_t StateMachine::compacted_revision() const {
  absl::ReaderMutexLock lock(&mu_);
  return store_.compacted_revision();
}

size_t StateMachine::live_key_count() const {
  absl::ReaderMutexLock lock(&mu_);
  return store_.live_key_count();
}

absl::StatusOr<etcdserverpb::RangeResponse> StateMachine::Range(const RangeRequest& request) const {
  absl::ReaderMutexLock lock(&mu_);
  return RangeLocked(request, 0);
}

absl::StatusOr<etcdserverpb::RangeResponse> StateMachine::RangeLocked(const RangeRequest& request,
                                                                      int64_t txn_revision) const {
  observer_->Range();
  const bool filtered = request.min_mod_revision() != 0 || request.max_mod_revision() != 0 ||
                        request.min_create_revision() != 0 || request.max_create_revision() != 0;
  auto order = request.sort_order();
  if (request.sort_target() != RangeRequest::KEY && order == RangeRequest::NONE)
    order = RangeRequest::ASCEND;
  const bool key_ordered =
      order == RangeRequest::NONE ||
      (order == RangeRequest::ASCEND && request.sort_target() == RangeRequest::KEY);
  RangeOptions options;
  options.revision = request.revision();
  options.count_only = request.count_only();
  // Sorting and filtering need every key; otherwise fetch one past the limit to learn `more`.
  options.limit = (!key_ordered || filtered || request.limit() <= 0) ? 0 : request.limit() + 1;
  ASSIGN_OR_RETURN(RangeResult result, store_.Range(request.key(), request.range_end(), options));

  std::vector<mvccpb::KeyValue>& kvs = result.kvs;
  if (filtered) {
    std::erase_if(kvs, [&](const mvccpb::KeyValue& kv) {
      return (request.max_mod_revision() != 0 && kv.mod_revision() > request.max_mod_revision()) ||
             (request.min_mod_revision() != 0 && kv.mod_revision() < request.min_mod_revision()) ||
             (request.max_create_revision() != 0 &&
              kv.create_revision() > request.max_create_revision()) ||
             (request.min_create_revision() != 0 &&
              kv.create_revision() < request.min_create_revision());
    });
  }
  if (!key_ordered) SortKvs(&kvs, request.sort_target(), order == RangeRequest::DESCEND);

  etcdserverpb::RangeResponse response;
  if (request.limit() > 0 && static_cast<int64_t>(kvs.size()) > request.limit()) {
    kvs.resize(request.limit());
    response.set_more(true);
  }
  response.set_count(result.count);
  // As etcd: the store's current revision (a write transaction's own), even for a read of the past.
  response.mutable_header()->set_revision(txn_revision > 0 ? txn_revision : store_.revision());
  for (auto& kv : kvs) {
    if (request.keys_only()) kv.clear_value();
    *response.add_kvs() = std::move(kv);
  }
  return response;
}

bool StateMachine::EvaluateCompare(const etcdserverpb::Compare& c) const {
  std::vector<mvccpb::KeyValue> kvs;
  store_.ForEachLive(c.key(), c.range_end(), [&](const std::string& key, const KeyRecord& record) {
    kvs.push_back(MvccStore::ToKeyValue(key, record));
  });
  if (kvs.empty()) {
    // A missing key compares as a zero KeyValue, except that no value equals a missing one.
    if (c.target() == Compare::VALUE) return false;
    return CompareKeyValue(c, mvccpb::KeyValue());
  }
  return std::all_of(kvs.begin(), kvs.end(),
                     [&](const mvccpb::KeyValue& kv) { return CompareKeyValue(c, kv); });
}

namespace {

void ComputePath(const StateMachine* self, const etcdserverpb::TxnRequest& request, TxnPath* path,
                 const std::function<bool(const Compare&)>& compare) {
  bool ok = std::all_of(request.compare().begin(), request.compare().end(), compare);
  path->push_back(ok);
  for (const auto& op : ok ? request.success() : request.failure()) {
    if (op.has_request_txn()) ComputePath(self, op.request_txn(), path, compare);
  }
}

}  // namespace

absl::Status StateMachine::ApplyPut(MvccStore::WriteTxn& txn,
                                    const etcdserverpb::PutRequest& request,
                                    etcdserverpb::PutResponse* response) {
  const KeyRecord* existing = store_.FindLive(request.key());
  if ((request.ignore_value() || request.ignore_lease()) && existing == nullptr)
    return errors::KeyNotFound();
  const int64_t old_lease = existing != nullptr ? existing->lease : 0;
  const int64_t lease = request.ignore_lease() ? old_lease : request.lease();
  if (lease != 0 && !leases_.Contains(lease)) return errors::LeaseNotFound();
  std::string value = request.ignore_value() ? existing->value : request.value();
  observer_->Put(request.key().size() + value.size());
  auto prev = txn.Put(request.key(), value, lease);
  if (request.prev_kv() && prev.has_value()) *response->mutable_prev_kv() = std::move(*prev);
  MoveKey(request.key(), old_lease, lease);
  response->mutable_header()->set_revision(txn.revision());
  return absl::OkStatus();
}

void StateMachine::ApplyDelete(MvccStore::WriteTxn& txn,
                               const etcdserverpb::DeleteRangeRequest& request,
                               etcdserverpb::DeleteRangeResponse* response) {
  observer_->DeleteRange();
  auto deleted = txn.DeleteRange(request.key(), request.range_end());
  response->set_deleted(static_cast<int64_t>(deleted.size()));
  for (auto& kv : deleted) {
    MoveKey(kv.key(), kv.lease(), 0);
    if (request.prev_kv()) *response->add_prev_kvs() = std::move(kv);
  }
  response->mutable_header()->set_revision(txn.revision());
}

void StateMachine::MoveKey(const std::string& key, int64_t from, int64_t to) {
  if (from == to) return;
  if (from != 0) leases_.Detach(from, key);
  if (to != 0) leases_.Attach(to, key);
}

absl::Status StateMachine::CheckTxnOps(const etcdserverpb::TxnRequest& request,
                                       TxnPath* path) const {
  path->clear();
  ComputePath(this, request, path,
              [this](const etcdserverpb::Compare& c)
                  ABSL_NO_THREAD_SAFETY_ANALYSIS { return EvaluateCompare(c); });
  size_t next = 0;
  std::function<absl::Status(const etcdserverpb::TxnRequest&)> check =
      [&](const etcdserverpb::TxnRequest& txn) ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
    const bool ok = (*path)[next++];
    for (const auto& op : ok ? txn.success() : txn.failure()) {
      if (op.has_request_put()) {
        const auto& put = op.request_put();
        const KeyRecord* existing = store_.FindLive(put.key());
        if ((put.ignore_value() || put.ignore_lease()) && existing == nullptr)
          return errors::KeyNotFound();
        const int64_t lease = put.ignore_lease() ? existing->lease : put.lease();
        if (lease != 0 && !leases_.Contains(lease)) return errors::LeaseNotFound();
      } else if (op.has_request_range()) {
        int64_t rev = op.request_range().revision();
        if (rev > store_.revision()) return errors::FutureRevision();
        if (rev > 0 && rev < store_.compacted_revision()) return errors::Compacted();
      } else if (op.has_request_txn()) {
        RETURN_IF_ERROR(check(op.request_txn()));
      }
    }
    return absl::OkStatus();
  };
  return check(request);
}

namespace {

// Walks the branches `path` chose through `request`, nested transactions included: sets each
// level's `succeeded`, adds one result per operation, lets `leaf` fill those of ranges, puts and
// deletes, and stamps the outer response's header with `revision()` once its operations have run (a
// write transaction's revision is known only after its first write); a nested one's stays empty.
void RunTxnPath(
    const TxnPath& path, const etcdserverpb::TxnRequest& request,
    const std::function<int64_t()>& revision,
    const std::function<void(const etcdserverpb::RequestOp&, etcdserverpb::ResponseOp*)>& leaf,
    etcdserverpb::TxnResponse* response) {
  size_t next = 0;
  std::function<void(const etcdserverpb::TxnRequest&, etcdserverpb::TxnResponse*)> run =
      [&](const etcdserverpb::TxnRequest& t, etcdserverpb::TxnResponse* out) {
        const bool ok = path[next++];
        out->set_succeeded(ok);
        for (const auto& op : ok ? t.success() : t.failure()) {
          auto* result = out->add_responses();
          if (op.has_request_txn()) {
            run(op.request_txn(), result->mutable_response_txn());
            result->mutable_response_txn()->mutable_header();  // present and empty, as etcd's
          } else {
            leaf(op, result);
          }
        }
      };
  run(request, response);
  response->mutable_header()->set_revision(revision());
}

}  // namespace

absl::Status StateMachine::ApplyTxn(MvccStore::WriteTxn& txn,
                                    const etcdserverpb::TxnRequest& request,
                                    etcdserverpb::TxnResponse* response) {
  TxnPath path;
  RETURN_IF_ERROR(CheckTxnOps(request, &path));
  int ops = 0;
  RunTxnPath(
      path, request, [&txn] { return txn.revision(); },
      [&](const etcdserverpb::RequestOp& op, etcdserverpb::ResponseOp* result)
          ABSL_NO_THREAD_SAFETY_ANALYSIS {
            ++ops;
            if (op.has_request_range()) {
              auto range = RangeLocked(op.request_range(), txn.revision());
              // Checked above: a range inside a transaction cannot fail here.
              if (range.ok()) *result->mutable_response_range() = std::move(*range);
            } else if (op.has_request_put()) {
              // Preconditions were checked against the state before the transaction; a put cannot
              // fail here.
              (void)ApplyPut(txn, op.request_put(), result->mutable_response_put());
            } else if (op.has_request_delete_range()) {
              ApplyDelete(txn, op.request_delete_range(), result->mutable_response_delete_range());
            }
          },
      response);
  if (ops > 1) observer_->Txn();
  return absl::OkStatus();
}

bool StateMachine::IsReadOnly(const etcdserverpb::TxnRequest& request) {
  for (const auto* ops : {&request.success(), &request.failure()}) {
    for (const auto& op : *ops) {
      if (op.has_request_txn() ? !IsReadOnly(op.request_txn()) : !op.has_request_range())
        return false;
    }
  }
  return true;
}

absl::StatusOr<etcdserverpb::TxnResponse> StateMachine::ReadOnlyTxn(
    const etcdserverpb::TxnRequest& request) const {
  if (!IsReadOnly(request)) return absl::InvalidArgumentError("not a read-only transaction");
  absl::ReaderMutexLock lock(&mu_);
  TxnPath path;
  RETURN_IF_ERROR(CheckTxnOps(request, &path));
  absl::Status failed;
  etcdserverpb::TxnResponse response;
  const int64_t revision = store_.revision();
  int ops = 0;
  RunTxnPath(
      path, request, [revision] { return revision; },
      [&](const etcdserverpb::RequestOp& op, etcdserverpb::ResponseOp* result)
          ABSL_NO_THREAD_SAFETY_ANALYSIS {
            ++ops;
            auto range = RangeLocked(op.request_range(), 0);  // every leaf is a range
            if (range.ok()) {
              *result->mutable_response_range() = std::move(*range);
            } else if (failed.ok()) {
              failed = range.status();
            }
          },
      &response);
  if (ops > 1) observer_->Txn();
  RETURN_IF_ERROR(failed);
  return response;
}

void StateMachine::PersistLease(int64_t id, rocksdb::WriteBatch* batch) {
  auto record = leases_.Record(id);
  if (!record) return;
  internalpb::LeaseRecord out;
  out.set_id(id);
  out.set_ttl_seconds(record->first);
  out.set_deadline_unix_ms(record->second);
  batch->Put(keys::Lease(id), out.SerializeAsString());
}

absl::Status StateMachine::ApplyLeaseGrant(const internalpb::InternalRequest& entry,
                                           rocksdb::WriteBatch* batch,
                                           etcdserverpb::LeaseGrantResponse* response) {
  const auto& request = entry.lease_grant();
  if (request.id() == 0) return errors::LeaseNotFound();
  if (request.ttl() > kMaxLeaseTtlSeconds) return errors::LeaseTtlTooLarge();
  if (leases_.Contains(request.id())) return errors::LeaseExists();
  const int64_t ttl = std::max(request.ttl(), options_.min_lease_ttl_seconds);
  leases_.Grant(request.id(), ttl, entry.time_unix_ms() + ttl * 1000);
  PersistLease(request.id(), batch);
  observer_->LeaseGranted(ttl);
  response->set_id(request.id());
  response->set_ttl(ttl);
  response->mutable_header()->set_revision(store_.revision());
  return absl::OkStatus();
}

absl::Status StateMachine::ApplyLeaseRevoke(int64_t id, rocksdb::WriteBatch* batch,
                                            etcdserverpb::LeaseRevokeResponse* response,
                                            std::vector<mvccpb::Event>* events) {
  if (!leases_.Contains(id)) return errors::LeaseNotFound();
  if (EndCoreLease(id, &blobs_, batch)) {
    leases_.Revoke(id);  // times a blob lease: no keys attached
    batch->Delete(keys::Lease(id));
    response->mutable_header()->set_revision(store_.revision());
    return absl::OkStatus();
  }
  // Every attached key goes in one revision, in sorted order, so all members write the same bytes.
  std::vector<std::string> keys = leases_.Revoke(id);
  MvccStore::WriteTxn txn(&store_, batch, events);
  for (const std::string& key : keys) {
    observer_->DeleteRange();
    txn.DeleteRange(key, "");
  }
  txn.Finish();
  if (keys.size() > 1) observer_->Txn();
  observer_->LeaseRevoked();
  batch->Delete(keys::Lease(id));
  response->mutable_header()->set_revision(store_.revision());
  return absl::OkStatus();
}

void StateMachine::ApplyLeaseExpiry(const internalpb::InternalRequest& entry,
                                    rocksdb::WriteBatch* batch,
                                    std::vector<mvccpb::Event>* events) {
  etcdserverpb::LeaseRevokeResponse unused;
  for (int64_t id : entry.lease_expiry().ids()) {
    if (!leases_.Contains(id) || RenewedPastDecision(id, entry)) continue;
    ApplyLeaseRevoke(id, batch, &unused, events).IgnoreError();  // cannot fail: it exists
  }
}

bool StateMachine::RenewedPastDecision(int64_t id, const internalpb::InternalRequest& entry) const {
  // A checkpoint applied since the leader decided carries a deadline past the decision: a renewal
  // was acknowledged, and the lease lives on.
  auto record = leases_.Record(id);
  return record && record->second > entry.time_unix_ms();
}

void StateMachine::ApplyCheckpoint(const internalpb::InternalRequest& entry,
                                   rocksdb::WriteBatch* batch) {
  for (const auto& checkpoint : entry.lease_checkpoint().entries()) {
    if (!leases_.Contains(checkpoint.id())) continue;
    leases_.Checkpoint(checkpoint.id(), entry.time_unix_ms() + checkpoint.remaining_ms());
    PersistLease(checkpoint.id(), batch);
  }
}

ApplyResult StateMachine::Apply(uint64_t index, const internalpb::InternalRequest& entry) {
  absl::MutexLock lock(&mu_);
  if (index <= applied_index_) {
    std::cerr << "apply: entry " << index << " is at or below the applied index " << applied_index_
              << "\n";
    std::abort();
  }
  ApplyResult result;
  rocksdb::WriteBatch& batch = unflushed_;
  auto& response = result.response;
  // As etcd's: once a member is found corrupt, the cluster refuses to change its keys and leases
  // (before anything else is checked) until the alarm is disarmed.
  if (RefusedWhenCorrupt(entry) && alarms_.Raised(etcdserverpb::CORRUPT)) {
    result.status = errors::Corrupt();
    applied_index_ = index;
    return result;
  }
  if (entry.has_caller() && auth_.enabled()) {
    if (absl::Status permitted = CheckCaller(entry); !permitted.ok()) {
      result.status = std::move(permitted);
      applied_index_ = index;
      return result;
    }
  }
  if (GrowsStore(entry) && alarms_.Raised(etcdserverpb::NOSPACE)) {
    result.status = errors::NoSpace();
    applied_index_ = index;
    return result;
  }
  switch (entry.request_case()) {
    case internalpb::InternalRequest::kPut: {
      MvccStore::WriteTxn txn(&store_, &batch, &result.events);
      result.status = ApplyPut(txn, entry.put(), response.mutable_put());
      txn.Finish();
      break;
    }
    case internalpb::InternalRequest::kDeleteRange: {
      MvccStore::WriteTxn txn(&store_, &batch, &result.events);
      ApplyDelete(txn, entry.delete_range(), response.mutable_delete_range());
      txn.Finish();
      break;
    }
    case internalpb::InternalRequest::kTxn: {
      MvccStore::WriteTxn txn(&store_, &batch, &result.events);
      result.status = ApplyTxn(txn, entry.txn(), response.mutable_txn());
      txn.Finish();
      break;
    }
    case internalpb::InternalRequest::kCompaction: {
      observer_->CompactionStarted();
      uint64_t versions_deleted = 0;
      result.status = store_.Compact(entry.compaction().revision(), &batch, &versions_deleted);
      observer_->CompactionFinished(versions_deleted);
      response.mutable_compaction()->mutable_header()->set_revision(store_.revision());
      break;
    }
    case internalpb::InternalRequest::kLeaseGrant:
      result.status = ApplyLeaseGrant(entry, &batch, response.mutable_lease_grant());
      break;
    case internalpb::InternalRequest::kLeaseRevoke:
      // A leader's own revoke of a lease it found expired (leader_term set; a client's has none)
      // yields to a checkpoint applied since, as a LeaseExpiry does.
      if (entry.leader_term() != 0 && RenewedPastDecision(entry.lease_revoke().id(), entry)) {
        result.status = absl::FailedPreconditionError("lease renewed since it expired");
        break;
      }
      result.status = ApplyLeaseRevoke(entry.lease_revoke().id(), &batch,
                                       response.mutable_lease_revoke(), &result.events);
      break;
    case internalpb::InternalRequest::kLeaseExpiry:
      ApplyLeaseExpiry(entry, &batch, &result.events);
      break;
    case internalpb::InternalRequest::kLeaseCheckpoint:
      ApplyCheckpoint(entry, &batch);
      break;
    case internalpb::InternalRequest::kMemberPublish:
      members_.ApplyPublish(entry.member_publish(), &batch);
      break;
    case internalpb::InternalRequest::kMemberUpdate:
      result.status = members_.ApplyUpdate(entry.member_update(), &batch);
      break;
    case internalpb::InternalRequest::kBlob:
      *response.mutable_blob() =
          ApplyBlobRequest(entry.blob(), entry.time_unix_ms(), &blobs_, &blob_timer_, &batch);
      break;
    case internalpb::InternalRequest::kAlarm:
      ApplyAlarm(entry.alarm(), &batch, response.mutable_alarm());
      break;
    case internalpb::InternalRequest::kAuth:
      result.status = auth_.Apply(entry.auth(), &batch);
      break;
    case internalpb::InternalRequest::REQUEST_NOT_SET:
      break;  // an empty entry (e.g. a new leader's no-op) only advances the applied index
  }
  applied_index_ = index;
  return result;
}

bool StateMachine::RefusedWhenCorrupt(const internalpb::InternalRequest& entry) {
  switch (entry.request_case()) {
    case internalpb::InternalRequest::kPut:
    case internalpb::InternalRequest::kDeleteRange:
    case internalpb::InternalRequest::kTxn:
    case internalpb::InternalRequest::kCompaction:
    case internalpb::InternalRequest::kLeaseGrant:
    case internalpb::InternalRequest::kLeaseRevoke:
    case internalpb::InternalRequest::kLeaseExpiry:
      return true;
    default:
      return false;
  }
}

bool StateMachine::GrowsStore(const internalpb::InternalRequest& entry) {
  switch (entry.request_case()) {
    case internalpb::InternalRequest::kPut:
    case internalpb::InternalRequest::kLeaseGrant:
      return true;
    case internalpb::InternalRequest::kTxn:
      return !IsReadOnly(entry.txn());
    default:
      return false;
  }
}

absl::Status StateMachine::CheckLeaseKeys(const std::string& user, int64_t id,
                                          Access access) const {
  auto lease = leases_.Lookup(id, 0, /*with_keys=*/true);
  if (!lease) return absl::OkStatus();
  for (const std::string& key : lease->keys)
    RETURN_IF_ERROR(auth_.CheckRange(user, key, "", access));
  return absl::OkStatus();
}

absl::Status StateMachine::CheckReadOnlyTxn(const std::string& user,
                                            const etcdserverpb::TxnRequest& txn) const {
  if (!auth_.enabled()) return absl::OkStatus();
  absl::ReaderMutexLock lock(&mu_);
  return CheckTxnCaller(user, txn);
}

absl::Status StateMachine::CheckLeaseKeysReadable(const std::string& user, int64_t lease_id) const {
  if (!auth_.enabled()) return absl::OkStatus();
  RETURN_IF_ERROR(auth_.CheckUser(user));
  absl::ReaderMutexLock lock(&mu_);
  return CheckLeaseKeys(user, lease_id, Access::kRead);
}

absl::Status StateMachine::CheckTxnCaller(const std::string& user,
                                          const etcdserverpb::TxnRequest& txn) const {
  for (const auto& compare : txn.compare()) {
    RETURN_IF_ERROR(auth_.CheckRange(user, compare.key(), compare.range_end(), Access::kRead));
  }
  // Both branches, whichever the compares pick: the outcome must not depend on the permissions.
  for (const auto* ops : {&txn.success(), &txn.failure()}) {
    for (const auto& op : *ops) {
      if (op.has_request_range()) {
        RETURN_IF_ERROR(auth_.CheckRange(user, op.request_range().key(),
                                         op.request_range().range_end(), Access::kRead));
      } else if (op.has_request_put()) {
        const auto& put = op.request_put();
        RETURN_IF_ERROR(auth_.CheckRange(user, put.key(), "", Access::kWrite));
        if (put.prev_kv()) RETURN_IF_ERROR(auth_.CheckRange(user, put.key(), "", Access::kRead));
        if (put.lease() != 0) RETURN_IF_ERROR(CheckLeaseKeys(user, put.lease(), Access::kWrite));
      } else if (op.has_request_delete_range()) {
        const auto& del = op.request_delete_range();
        RETURN_IF_ERROR(auth_.CheckRange(user, del.key(), del.range_end(), Access::kWrite));
        if (del.prev_kv())
          RETURN_IF_ERROR(auth_.CheckRange(user, del.key(), del.range_end(), Access::kRead));
      } else if (op.has_request_txn()) {
        RETURN_IF_ERROR(CheckTxnCaller(user, op.request_txn()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status StateMachine::CheckCaller(const internalpb::InternalRequest& entry) const {
  const std::string& user = entry.caller().user();
  switch (entry.request_case()) {
    case internalpb::InternalRequest::kPut: {
      const auto& put = entry.put();
      RETURN_IF_ERROR(auth_.CheckRange(user, put.key(), "", Access::kWrite));
      if (put.prev_kv()) RETURN_IF_ERROR(auth_.CheckRange(user, put.key(), "", Access::kRead));
      // etcd's rule: attaching a key to a lease needs write access to the lease's other keys,
      // since revoking it deletes them all.
      if (put.lease() != 0) RETURN_IF_ERROR(CheckLeaseKeys(user, put.lease(), Access::kWrite));
      return absl::OkStatus();
    }
    case internalpb::InternalRequest::kDeleteRange: {
      const auto& del = entry.delete_range();
      RETURN_IF_ERROR(auth_.CheckRange(user, del.key(), del.range_end(), Access::kWrite));
      if (del.prev_kv())
        RETURN_IF_ERROR(auth_.CheckRange(user, del.key(), del.range_end(), Access::kRead));
      return absl::OkStatus();
    }
    case internalpb::InternalRequest::kTxn:
      return CheckTxnCaller(user, entry.txn());
    case internalpb::InternalRequest::kLeaseGrant:
      return auth_.CheckUser(user);
    case internalpb::InternalRequest::kLeaseRevoke:
      // Revoking deletes the lease's keys: the caller must be allowed to delete each of them.
      RETURN_IF_ERROR(auth_.CheckUser(user));
      return CheckLeaseKeys(user, entry.lease_revoke().id(), Access::kWrite);
    case internalpb::InternalRequest::kAlarm:
      return absl::OkStatus();  // as etcd: alarms are anyone's to list and disarm
    case internalpb::InternalRequest::kCompaction:
      return auth_.CheckUser(user);  // etcd lets any user compact (not the root role only)
    case internalpb::InternalRequest::kAuth:
      if (entry.auth().has_authenticate()) return absl::OkStatus();
      return auth_.CheckAdmin(user);
    default:
      // Anything else a client should not be making needs the root role.
      return auth_.CheckAdmin(user);
  }
}

void StateMachine::ApplyAlarm(const etcdserverpb::AlarmRequest& request, rocksdb::WriteBatch* batch,
                              etcdserverpb::AlarmResponse* response) {
  std::optional<etcdserverpb::AlarmMember> changed;
  if (request.action() == etcdserverpb::AlarmRequest::ACTIVATE) {
    changed = alarms_.Activate(request.memberid(), request.alarm(), batch);
  } else if (request.action() == etcdserverpb::AlarmRequest::DEACTIVATE) {
    changed = alarms_.Deactivate(request.memberid(), request.alarm(), batch);
  }
  if (changed) *response->add_alarms() = *changed;
  response->mutable_header()->set_revision(store_.revision());
}

void StateMachine::ApplyConfChange(uint64_t index, const raftpb::ConfChange& change,
                                   const raftpb::ConfState& conf_state) {
  absl::MutexLock lock(&mu_);
  if (index <= applied_index_) {
    std::cerr << "apply: membership change " << index << " is at or below the applied index "
              << applied_index_ << "\n";
    std::abort();
  }
  members_.ApplyConfChange(change, &unflushed_);
  RaftLogStore::PutConfState(conf_state, &unflushed_);
  applied_index_ = index;
}

void StateMachine::FlushApplied() {
  absl::MutexLock lock(&mu_);
  if (unflushed_.Count() == 0) return;
  Engine::PutMetaU64(&unflushed_, "ci", applied_index_);
  if (absl::Status written = engine_->Write(&unflushed_, /*sync=*/false); !written.ok()) {
    std::cerr << "apply: cannot write entries up to " << applied_index_ << ": " << written << "\n";
    std::abort();
  }
  unflushed_.Clear();
  store_.ClearUnflushed();
}

}  // namespace leasehold::storage

namespace leasehold::storage {

int64_t StateMachine::BlobTimer::Start(int64_t preferred_id, int64_t now_ms, int64_t deadline_ms) {
  sm_->mu_.AssertHeld();
  int64_t id = preferred_id > 0 ? preferred_id : 1;
  // A client may have taken the id with an explicit LeaseGrant; the next free one is as good.
  while (sm_->leases_.Contains(id)) id = id == INT64_MAX ? 1 : id + 1;
  const int64_t ttl_seconds = std::max<int64_t>(1, (deadline_ms - now_ms + 999) / 1000);
  sm_->leases_.Grant(id, ttl_seconds, deadline_ms);
  sm_->PersistLease(id, &sm_->unflushed_);
  return id;
}

void StateMachine::BlobTimer::Stop(int64_t id) {
  sm_->mu_.AssertHeld();
  if (!sm_->leases_.Contains(id)) return;
  sm_->leases_.Revoke(id);
  sm_->unflushed_.Delete(keys::Lease(id));
}

internalpb::BlobResponse StateMachine::ReadBlob(const internalpb::BlobRequest& request,
                                                int64_t now_ms) const {
  absl::ReaderMutexLock lock(&mu_);
  return ReadBlobRequest(request, now_ms, blobs_);
}

void StateMachine::ReadBlobTable(const std::function<void(const BlobTable&)>& fn) const {
  absl::ReaderMutexLock lock(&mu_);
  fn(blobs_);
}

bool StateMachine::IsBlobCoreLease(int64_t id) const {
  absl::ReaderMutexLock lock(&mu_);
  return blobs_.OwnerOfCoreLease(id).has_value();
}

}  // namespace leasehold::storage
