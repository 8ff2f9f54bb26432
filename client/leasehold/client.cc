#include "client/leasehold/client.h"

#include <algorithm>

#include "absl/synchronization/mutex.h"

namespace leasehold {

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  endpoints_ = options_.channel != nullptr ? std::make_unique<EndpointSet>(options_.channel)
                                           : std::make_unique<EndpointSet>(options_.endpoints);
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(ClientOptions options) {
  if (options.channel == nullptr && options.endpoints.empty()) {
    return absl::InvalidArgumentError("no endpoints given");
  }
  return std::unique_ptr<Client>(new Client(std::move(options)));
}

std::unique_ptr<Client> Client::WithAuthToken(std::string auth_token) const {
  ClientOptions options = options_;
  options.auth_token = std::move(auth_token);
  return std::unique_ptr<Client>(new Client(std::move(options)));
}

void Client::PrepareContext(grpc::ClientContext* context) const {
  if (!options_.auth_token.empty()) context->AddMetadata("token", options_.auth_token);
}

template <typename Response, typename Call>
absl::StatusOr<Response> Client::Invoke(bool idempotent, Call call) {
  const absl::Time deadline = absl::Now() + options_.request_timeout;
  grpc::Status status;
  for (size_t attempt = 0;; ++attempt) {
    size_t index = 0;
    const Endpoint& endpoint = endpoints_->Current(&index);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    PrepareContext(&context);
    Response response;
    status = call(endpoint, &context, &response);
    if (status.ok()) return response;
    if (RetryPolicy::ShouldFailover(status)) endpoints_->Failed(index);
    if (!RetryPolicy::MayResend(status, idempotent) || absl::Now() >= deadline) break;
    if ((attempt + 1) % endpoints_->size() == 0) {
      // Every member was tried: give the cluster up to 100 ms to elect a leader or restart, then
      // go round again until the request's deadline (as etcd's clients do).
      const absl::Time until = std::min(deadline, absl::Now() + absl::Milliseconds(100));
      endpoints_->Current(&index).AwaitConnected(until);
      absl::SleepFor(until - absl::Now());  // connected early: a leader may still be missing
    }
  }
  return FromGrpc(status);
}

absl::StatusOr<etcdserverpb::RangeResponse> Client::Range(
    const etcdserverpb::RangeRequest& request) {
  return Invoke<etcdserverpb::RangeResponse>(
      true, [&](const Endpoint& e, grpc::ClientContext* c, auto* r) {
        return e.kv->Range(c, request, r);
      });
}

absl::StatusOr<etcdserverpb::PutResponse> Client::Put(const etcdserverpb::PutRequest& request) {
  return Invoke<etcdserverpb::PutResponse>(
      false,
      [&](const Endpoint& e, grpc::ClientContext* c, auto* r) { return e.kv->Put(c, request, r); });
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> Client::Delete(
    const etcdserverpb::DeleteRangeRequest& request) {
  return Invoke<etcdserverpb::DeleteRangeResponse>(
      false, [&](const Endpoint& e, grpc::ClientContext* c, auto* r) {
        return e.kv->DeleteRange(c, request, r);
      });
}

absl::StatusOr<etcdserverpb::TxnResponse> Client::Txn(const etcdserverpb::TxnRequest& request) {
  bool read_only = true;
  for (const auto* ops : {&request.success(), &request.failure()}) {
    for (const auto& op : *ops) read_only = read_only && op.has_request_range();
  }
  return Invoke<etcdserverpb::TxnResponse>(
      read_only,
      [&](const Endpoint& e, grpc::ClientContext* c, auto* r) { return e.kv->Txn(c, request, r); });
}

absl::StatusOr<etcdserverpb::PutResponse> Client::Put(const std::string& key,
                                                      const std::string& value, int64_t lease) {
  etcdserverpb::PutRequest request;
  request.set_key(key);
  request.set_value(value);
  request.set_lease(lease);
  return Put(request);
}

absl::StatusOr<std::optional<mvccpb::KeyValue>> Client::Get(const std::string& key) {
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  auto response = Range(request);
  if (!response.ok()) return response.status();
  if (response->kvs_size() == 0) return std::optional<mvccpb::KeyValue>();
  return std::optional<mvccpb::KeyValue>(response->kvs(0));
}

absl::StatusOr<etcdserverpb::RangeResponse> Client::GetPrefix(const std::string& prefix) {
  etcdserverpb::RangeRequest request;
  request.set_key(prefix);
  request.set_range_end(PrefixEnd(prefix));
  return Range(request);
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> Client::Delete(const std::string& key) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(key);
  return Delete(request);
}

absl::StatusOr<etcdserverpb::LeaseGrantResponse> Client::LeaseGrant(int64_t ttl_seconds,
                                                                    int64_t id) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_seconds);
  request.set_id(id);
  // A grant with a server-chosen id is not idempotent; one with a given id is (a repeat fails
  // cleanly).
  return Invoke<etcdserverpb::LeaseGrantResponse>(
      id != 0, [&](const Endpoint& e, grpc::ClientContext* c, auto* r) {
        return e.lease->LeaseGrant(c, request, r);
      });
}

absl::StatusOr<etcdserverpb::LeaseRevokeResponse> Client::LeaseRevoke(int64_t id) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(id);
  return Invoke<etcdserverpb::LeaseRevokeResponse>(
      false, [&](const Endpoint& e, grpc::ClientContext* c, auto* r) {
        return e.lease->LeaseRevoke(c, request, r);
      });
}

absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> Client::LeaseTimeToLive(int64_t id,
                                                                              bool keys) {
  etcdserverpb::LeaseTimeToLiveRequest request;
  request.set_id(id);
  request.set_keys(keys);
  return Invoke<etcdserverpb::LeaseTimeToLiveResponse>(
      true, [&](const Endpoint& e, grpc::ClientContext* c, auto* r) {
        return e.lease->LeaseTimeToLive(c, request, r);
      });
}

absl::StatusOr<etcdserverpb::LeaseLeasesResponse> Client::LeaseLeases() {
  etcdserverpb::LeaseLeasesRequest request;
  return Invoke<etcdserverpb::LeaseLeasesResponse>(
      true, [&](const Endpoint& e, grpc::ClientContext* c, auto* r) {
        return e.lease->LeaseLeases(c, request, r);
      });
}

absl::StatusOr<etcdserverpb::MemberListResponse> Client::MemberList() {
  etcdserverpb::MemberListRequest request;
  return Invoke<etcdserverpb::MemberListResponse>(
      true, [&](const Endpoint& e, grpc::ClientContext* c, auto* r) {
        return e.cluster->MemberList(c, request, r);
      });
}

std::unique_ptr<Watch> Client::StartWatch(etcdserverpb::WatchCreateRequest request,
                                          Watch::Handler handler) {
  return std::make_unique<Watch>(endpoints_.get(), std::move(request), std::move(handler),
                                 options_.auth_token);
}

absl::Status Client::WaitForDelete(const std::string& key, int64_t from_revision,
                                   absl::Time deadline, const CancellationToken& cancel) {
  struct Wake {
    absl::Mutex mu;
    bool deleted ABSL_GUARDED_BY(mu) = false;
    bool ended ABSL_GUARDED_BY(mu) = false;  // the server cancelled the watch
    bool compacted ABSL_GUARDED_BY(mu) = false;
    bool cancelled ABSL_GUARDED_BY(mu) = false;
    bool Any() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return deleted || ended || cancelled; }
  } wake;
  etcdserverpb::WatchCreateRequest request;
  request.set_key(key);
  request.set_start_revision(from_revision);
  request.add_filters(etcdserverpb::WatchCreateRequest::NOPUT);
  auto watch = StartWatch(request, [&wake](const etcdserverpb::WatchResponse& response) {
    absl::MutexLock lock(&wake.mu);
    if (response.canceled()) {
      wake.ended = true;
      wake.compacted = response.compact_revision() > 0;
    }
    for (const auto& e : response.events())
      wake.deleted = wake.deleted || e.type() == mvccpb::Event::DELETE;
  });
  const int64_t subscription = cancel.OnCancel([&wake] {
    absl::MutexLock lock(&wake.mu);
    wake.cancelled = true;
  });
  bool deleted, ended, compacted, cancelled;
  {
    absl::MutexLock lock(&wake.mu);
    wake.mu.AwaitWithDeadline(absl::Condition(&wake, &Wake::Any), deadline);
    deleted = wake.deleted, ended = wake.ended, compacted = wake.compacted,
    cancelled = wake.cancelled;
  }
  cancel.Unsubscribe(subscription);
  watch->Cancel();
  if (deleted) return absl::OkStatus();
  if (cancelled) return absl::CancelledError(cancel.reason());
  if (!ended) return absl::DeadlineExceededError("timed out waiting for " + key + " to be deleted");
  if (!compacted) return watch->Wait();
  // The history was compacted: judge by the present, and if the key is still there wait from now.
  etcdserverpb::RangeRequest range;
  range.set_key(key);
  range.set_count_only(true);
  auto now = Range(range);
  if (!now.ok()) return now.status();
  if (now->count() == 0) return absl::OkStatus();
  return WaitForDelete(key, now->header().revision() + 1, deadline, cancel);
}

}  // namespace leasehold
