// leasehold::Client: an etcd v3 client for Leasehold (and etcd) servers. KV, Txn and Lease calls
// are blocking and return etcd's error codes and messages as absl::Status; watches run on their own
// threads (see watch.h). The building blocks for services sit on top: ManagedLease, Mutex,
// Election, Registry.
//
// Endpoints and failover: given several endpoints, the client uses one at a time and moves to the
// next when a call finds the member unreachable or without a leader. Reads are then resent on the
// next member; writes are resent only when they surely never reached the log (see RetryPolicy), so
// a write that fails with UNAVAILABLE may or may not have been applied: its outcome is unknown. A
// call that may be resent goes round the members, pausing 100 ms after each round, until it
// succeeds or its request timeout passes.
//
// Thread-safe: one Client may serve any number of threads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/leasehold/cancellation.h"
#include "client/leasehold/endpoints.h"
#include "client/leasehold/watch.h"
#include "etcdserverpb/rpc.pb.h"

namespace leasehold {

struct ClientOptions {
  // "host:port" or "http://host:port", tried in this order.
  std::vector<std::string> endpoints;
  // Used instead of `endpoints` when set (e.g. a server's in-process channel).
  std::shared_ptr<grpc::Channel> channel;
  // Upper bound for each blocking call, retries on other endpoints included.
  absl::Duration request_timeout = absl::Seconds(10);
  // etcd's v3 auth: a token from Authenticate, sent as "token" metadata with every call. A token
  // lapses after the server's --auth-token-ttl without use; calls then fail with "invalid auth
  // token".
  std::string auth_token;
};

class Client {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Client>> Connect(ClientOptions options);

  // --- KV ---
  [[nodiscard]] absl::StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& request);
  [[nodiscard]] absl::StatusOr<etcdserverpb::PutResponse> Put(
      const etcdserverpb::PutRequest& request);
  [[nodiscard]] absl::StatusOr<etcdserverpb::DeleteRangeResponse> Delete(
      const etcdserverpb::DeleteRangeRequest& request);
  [[nodiscard]] absl::StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& request);

  [[nodiscard]] absl::StatusOr<etcdserverpb::PutResponse> Put(const std::string& key,
                                                              const std::string& value,
                                                              int64_t lease = 0);
  // The key's current value, or nullopt when it does not exist.
  [[nodiscard]] absl::StatusOr<std::optional<mvccpb::KeyValue>> Get(const std::string& key);
  // Every key starting with `prefix`, sorted by key.
  [[nodiscard]] absl::StatusOr<etcdserverpb::RangeResponse> GetPrefix(const std::string& prefix);
  [[nodiscard]] absl::StatusOr<etcdserverpb::DeleteRangeResponse> Delete(const std::string& key);

  // --- Lease ---
  // `id` 0 lets the server choose.
  [[nodiscard]] absl::StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(int64_t ttl_seconds,
                                                                            int64_t id = 0);
  [[nodiscard]] absl::StatusOr<etcdserverpb::LeaseRevokeResponse> LeaseRevoke(int64_t id);
  [[nodiscard]] absl::StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaseTimeToLive(
      int64_t id, bool keys = false);
  [[nodiscard]] absl::StatusOr<etcdserverpb::LeaseLeasesResponse> LeaseLeases();

  // --- Cluster ---
  [[nodiscard]] absl::StatusOr<etcdserverpb::MemberListResponse> MemberList();

  // --- Watch ---
  // Starts a watch (see watch.h): `handler` gets its responses on the watch's thread, resumed from
  // the last delivered revision across reconnects. The watch runs until the returned object is
  // destroyed, cancelled, or the server cancels it (e.g. its start revision was compacted).
  std::unique_ptr<Watch> StartWatch(etcdserverpb::WatchCreateRequest request,
                                    Watch::Handler handler);

  // Blocks until `key` is deleted at a revision >= `from_revision` (OK), `deadline` passes
  // (DeadlineExceeded) or `cancel` is cancelled (Cancelled). Waits by watch, never by polling. When
  // the history needed was compacted, the key's absence now counts as deleted.
  [[nodiscard]] absl::Status WaitForDelete(const std::string& key, int64_t from_revision,
                                           absl::Time deadline, const CancellationToken& cancel);

  EndpointSet& endpoints() { return *endpoints_; }
  // A client on the same endpoints (or channel) and options that presents `auth_token` instead.
  std::unique_ptr<Client> WithAuthToken(std::string auth_token) const;
  // Adds what every call carries (the auth token) to `context`.
  void PrepareContext(grpc::ClientContext* context) const;
  absl::Duration request_timeout() const { return options_.request_timeout; }

 private:
  explicit Client(ClientOptions options);
  // Runs `call` on the current endpoint, failing over and resending as RetryPolicy allows.
  template <typename Response, typename Call>
  [[nodiscard]] absl::StatusOr<Response> Invoke(bool idempotent, Call call);

  ClientOptions options_;
  std::unique_ptr<EndpointSet> endpoints_;
};

// "The end of the range of keys starting with `prefix`" (etcd's WithPrefix).
std::string PrefixEnd(const std::string& prefix);
// A grpc::Status as an absl::Status (same code, same message).
[[nodiscard]] absl::Status FromGrpc(const grpc::Status& status);

}  // namespace leasehold
