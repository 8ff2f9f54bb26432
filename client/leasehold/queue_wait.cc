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

absl::StatusOr<int64_t> WaitUntilFirst(Client* client, const std::string& prefix,
                                       const std::string& key, int64_t create_revision,
                                       absl::Time deadline, const CancellationToken& cancel) {
  while (true) {
    // One read-only transaction: who is just ahead of us, and are we still queued.
    etcdserverpb::TxnRequest txn;
    *txn.add_success()->mutable_request_range() = NewestBefore(prefix, create_revision - 1);
    txn.add_success()->mutable_request_range()->set_key(key);
    auto response = client->Txn(txn);
    if (!response.ok()) return response.status();
    const auto& mine = response->responses(1).response_range();
    if (mine.kvs_size() == 0 || mine.kvs(0).create_revision() != create_revision) {
      return absl::FailedPreconditionError("the lease of " + key + " ended while it was waiting");
    }
    const auto& ahead = response->responses(0).response_range();
    if (ahead.kvs_size() == 0) return response->header().revision();
    absl::Status st = client->WaitForDelete(ahead.kvs(0).key(), response->header().revision() + 1,
                                            deadline, cancel);
    if (!st.ok()) return st;
  }
}

}  // namespace leasehold
