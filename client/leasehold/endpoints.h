// The endpoints a client may talk to, one gRPC channel (and stubs) each, and which one is in use.
// A call that fails for want of a server moves every later call to the next endpoint; whether the
// failed call itself may be retried is decided by RetryPolicy below. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "etcdserverpb/rpc.grpc.pb.h"

namespace leasehold {

struct Endpoint {
  std::string target;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  std::unique_ptr<etcdserverpb::Cluster::Stub> cluster;

  // Waits until the channel is connected or `until`, whichever comes first, asking it to connect.
  // Use it instead of sleeping before a retry: gRPC advances a connection attempt only while some
  // thread waits on it, and a call on a channel that is backing off fails without waiting, so a
  // client that only sleeps and retries can see every attempt time out half-made.
  void AwaitConnected(absl::Time until) const;
};

class EndpointSet {
 public:
  // `targets`: "host:port" or "http://host:port". Channels connect lazily.
  explicit EndpointSet(const std::vector<std::string>& targets);
  // A single ready-made channel (e.g. a server's in-process channel).
  explicit EndpointSet(std::shared_ptr<grpc::Channel> channel);

  size_t size() const { return endpoints_.size(); }
  // The endpoint to use now, and its index for Failed().
  const Endpoint& Current(size_t* index) const;
  // The endpoint at `index` failed: later calls go to the next one. A no-op when another caller has
  // already moved on from it.
  void Failed(size_t index);

 private:
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  mutable absl::Mutex mu_;
  size_t current_ ABSL_GUARDED_BY(mu_) = 0;
};

// Whether a failed call should move to another endpoint, and whether it may be sent again.
struct RetryPolicy {
  // The server could not be reached or has no leader: try another member.
  static bool ShouldFailover(const grpc::Status& status);
  // Reads may always be resent. A write may be resent only when it surely never reached the log:
  // the connection was never made, or the member refused it for want of a leader or because it is
  // a learner (which refuses before doing anything).
  static bool MayResend(const grpc::Status& status, bool idempotent);
};

}  // namespace leasehold
