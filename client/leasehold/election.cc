#include "client/leasehold/election.h"

#include <deque>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "client/leasehold/client.h"
#include "client/leasehold/queue_wait.h"

namespace leasehold {
namespace {

etcdserverpb::Compare StillLeads(const LeaderKey& leader) {
  return CreateRevisionIs(leader.key, leader.rev);
}

// Responses of one watch, handed from its thread to a waiting caller.
class WatchQueue {
 public:
  explicit WatchQueue(const CancellationToken& cancel) : cancel_(cancel) {
    subscription_ = cancel_.OnCancel([this] {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    });
  }
  ~WatchQueue() { cancel_.Unsubscribe(subscription_); }

  void Push(const etcdserverpb::WatchResponse& response) {
    absl::MutexLock lock(&mu_);
    if (response.canceled()) ended_ = true;
    if (response.events_size() > 0) queue_.push_back(response);
  }
  // The next response with events; nullopt when cancelled or the watch ended.
  std::optional<etcdserverpb::WatchResponse> Pop() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &WatchQueue::Ready));
    if (cancelled_ || queue_.empty()) return std::nullopt;
    auto response = std::move(queue_.front());
    queue_.pop_front();
    return response;
  }

 private:
  bool Ready() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cancelled_ || ended_ || !queue_.empty();
  }

  CancellationToken cancel_;
  int64_t subscription_ = 0;
  absl::Mutex mu_;
  std::deque<etcdserverpb::WatchResponse> queue_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

Election::Election(Client* client, std::string name)
    : client_(client), name_(name), prefix_(name + "/") {}

absl::StatusOr<LeaderKey> Election::Campaign(int64_t lease_id, const std::string& value,
                                             absl::Duration timeout,
                                             const CancellationToken& cancel) {
  const absl::Time deadline = absl::Now() + timeout;
  LeaderKey leader{name_, absl::StrFormat("%s%x", prefix_, lease_id), 0, lease_id};
  auto place = Enqueue(client_, prefix_, leader.key, value, lease_id);
  if (!place.ok()) return place.status();
  campaign_revision_ = place->revision;
  leader.rev = place->create_revision;
  if (place->existed && place->existing_value != value) {
    // Campaigning again with a new value: the queued key takes it.
    auto proclaimed = Proclaim(leader, value);
    if (!proclaimed.ok()) {
      Resign(leader).IgnoreError();
      return proclaimed.status();
    }
  }
  if (place->first) return leader;
  auto led_at = WaitUntilFirst(client_, prefix_, leader.key, leader.rev, deadline, cancel);
  if (led_at.ok()) return leader;
  if (!absl::IsFailedPrecondition(led_at.status())) Resign(leader).IgnoreError();
  return led_at.status();
}

absl::StatusOr<etcdserverpb::ResponseHeader> Election::Proclaim(const LeaderKey& leader,
                                                                const std::string& value) {
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = StillLeads(leader);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(leader.key);
  put->set_value(value);
  put->set_lease(leader.lease);
  auto response = client_->Txn(txn);
  if (!response.ok()) return response.status();
  if (!response->succeeded()) return absl::FailedPreconditionError("election: not leader");
  return response->header();
}

absl::StatusOr<etcdserverpb::ResponseHeader> Election::Resign(const LeaderKey& leader) {
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = StillLeads(leader);
  txn.add_success()->mutable_request_delete_range()->set_key(leader.key);
  auto response = client_->Txn(txn);
  if (!response.ok()) return response.status();
  return response->header();
}

absl::StatusOr<etcdserverpb::RangeResponse> Election::FirstKey() {
  etcdserverpb::RangeRequest first;
  first.set_key(prefix_);
  first.set_range_end(PrefixEnd(prefix_));
  first.set_sort_target(etcdserverpb::RangeRequest::CREATE);
  first.set_sort_order(etcdserverpb::RangeRequest::ASCEND);
  first.set_limit(1);
  return client_->Range(first);
}

absl::StatusOr<etcdserverpb::RangeResponse> Election::Leader() {
  auto response = FirstKey();
  if (response.ok() && response->kvs_size() == 0) return absl::NotFoundError("election: no leader");
  return response;
}

absl::Status Election::Observe(const LeaderHandler& on_leader, const CancellationToken& cancel) {
  while (!cancel.cancelled()) {
    auto current = FirstKey();
    if (!current.ok()) return current.status();
    etcdserverpb::ResponseHeader header = current->header();
    mvccpb::KeyValue leader;
    if (current->kvs_size() > 0) {
      leader = current->kvs(0);
    } else {
      // Nobody campaigns yet: the first key put under the prefix after our read leads.
      etcdserverpb::WatchCreateRequest request;
      request.set_key(prefix_);
      request.set_range_end(PrefixEnd(prefix_));
      request.set_start_revision(header.revision() + 1);
      request.add_filters(etcdserverpb::WatchCreateRequest::NODELETE);
      WatchQueue queue(cancel);
      auto watch = client_->StartWatch(
          request, [&queue](const etcdserverpb::WatchResponse& r) { queue.Push(r); });
      auto response = queue.Pop();
      if (!response.has_value()) {
        if (cancel.cancelled()) return absl::OkStatus();
        watch->Cancel();
        absl::Status st = watch->Wait();
        if (absl::IsOutOfRange(st)) continue;
        return st;
      }
      header = response->header();
      leader = response->events(0).kv();
      header.set_revision(leader.mod_revision());
    }
    on_leader(header, leader);
    // Follow the leader's key: each new value is a proclamation; its deletion ends its leadership.
    etcdserverpb::WatchCreateRequest request;
    request.set_key(leader.key());
    request.set_start_revision(header.revision() + 1);
    WatchQueue queue(cancel);
    auto watch = client_->StartWatch(
        request, [&queue](const etcdserverpb::WatchResponse& r) { queue.Push(r); });
    bool deleted = false;
    while (!deleted) {
      auto response = queue.Pop();
      if (!response.has_value()) {
        if (cancel.cancelled()) return absl::OkStatus();
        watch->Cancel();
        absl::Status st = watch->Wait();
        if (absl::IsOutOfRange(st)) break;  // compacted meanwhile: find the leader afresh
        return st;
      }
      for (const auto& event : response->events()) {
        if (event.type() == mvccpb::Event::DELETE) {
          deleted = true;
          break;
        }
        etcdserverpb::ResponseHeader at = response->header();
        on_leader(at, event.kv());
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace leasehold
