#include "client/leasehold/queue_wait.h"

#include "client/leasehold/client.h"

namespace leasehold {
namespace {

// Range of the newest key under `prefix` created at or before `max_create_revision`.
etcdserverpb::RangeRequest NewestBefore(const std::string& prefix, int64_t max_create_revision) {
  etcdserverpb::RangeRequest ahead;
  ahead.set_key(prefix);
  ahead.set_range_end(PrefixEnd(prefix));
  ahead.set_max_create_revision(max_create_revision);
  ahead.set_sort_target(etcdserverpb::RangeRequest::CREATE);
  ahead.set_sort_order(etcdserverpb::RangeRequest::DESCEND);
  ahead.set_limit(1);
  return ahead;
}

}  // namespace

etcdserverpb::Compare CreateRevisionIs(const std::string& key, int64_t revision) {
  etcdserverpb::Compare compare;
  compare.set_key(key);
  compare.set_target(etcdserverpb::Compare::CREATE);
  compare.set_result(etcdserverpb::Compare::EQUAL);
  compare.set_create_revision(revision);
  return compare;
}

etcdserverpb::TxnRequest EnqueueTxn(const std::string& prefix, const std::string& key,
                                    const std::string& value, int64_t lease) {
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = CreateRevisionIs(key, 0);  // the key does not exist
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  put->set_lease(lease);
  txn.add_failure()->mutable_request_range()->set_key(key);
  for (auto* ops : {txn.mutable_success(), txn.mutable_failure()}) {
    auto* owner = ops->Add()->mutable_request_range();
    owner->set_key(prefix);
    owner->set_range_end(PrefixEnd(prefix));
    owner->set_sort_target(etcdserverpb::RangeRequest::CREATE);
    owner->set_sort_order(etcdserverpb::RangeRequest::ASCEND);
    owner->set_limit(1);
  }
  return txn;
}

absl::StatusOr<QueuePlace> PlaceOf(const etcdserverpb::TxnResponse& response,
                                   const std::string& key) {
  QueuePlace place;
  place.revision = response.header().revision();
  place.existed = !response.succeeded();
  place.create_revision = response.header().revision();
  if (place.existed) {
    const auto& mine = response.responses(0).response_range();
    if (mine.kvs_size() == 0)
      return absl::AbortedError("the key " + key + " vanished while enqueuing; try again");
    place.create_revision = mine.kvs(0).create_revision();
    place.existing_value = mine.kvs(0).value();
  }
  const auto& owner = response.responses(1).response_range();
  place.first = owner.kvs_size() > 0 && owner.kvs(0).create_revision() == place.create_revision;
  return place;
}

absl::StatusOr<QueuePlace> Enqueue(Client* client, const std::string& prefix,
                                   const std::string& key, const std::string& value,
                                   int64_t lease) {
  auto response = client->Txn(EnqueueTxn(prefix, key, value, lease));
  if (!response.ok()) return response.status();
  return PlaceOf(*response, key);
}

etcdserverpb::TxnRequest AheadTxn(const std::string& prefix, const std::string& key,
                                  int64_t create_revision) {
  etcdserverpb::TxnRequest txn;
  *txn.add_success()->mutable_request_range() = NewestBefore(prefix, create_revision - 1);
  txn.add_success()->mutable_request_range()->set_key(key);
  return txn;
}

Ahead AheadOf(const etcdserverpb::TxnResponse& response, int64_t create_revision) {
  Ahead ahead;
  ahead.revision = response.header().revision();
  const auto& mine = response.responses(1).response_range();
  ahead.queued = mine.kvs_size() > 0 && mine.kvs(0).create_revision() == create_revision;
  const auto& newest = response.responses(0).response_range();
  if (newest.kvs_size() > 0) ahead.key = newest.kvs(0).key();
  return ahead;
}

absl::StatusOr<int64_t> WaitUntilFirst(Client* client, const std::string& prefix,
                                       const std::string& key, int64_t create_revision,
                                       absl::Time deadline, const CancellationToken& cancel) {
  while (true) {
    auto response = client->Txn(AheadTxn(prefix, key, create_revision));
    if (!response.ok()) return response.status();
    const Ahead ahead = AheadOf(*response, create_revision);
    if (!ahead.queued) {
      return absl::FailedPreconditionError("the lease of " + key + " ended while it was waiting");
    }
    if (ahead.key.empty()) return ahead.revision;
    absl::Status st = client->WaitForDelete(ahead.key, ahead.revision + 1, deadline, cancel);
    if (!st.ok()) return st;
  }
}

}  // namespace leasehold
