// A fixed pool of gRPC connections (each its own TCP connection, even to the same endpoint) spread
// round-robin over the endpoints; client i uses connection i % conns.
#pragma once

#include <memory>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "client/bench/options.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "v3lockpb/v3lock.grpc.pb.h"

namespace leasehold::bench {

class Connections {
 public:
  explicit Connections(const Options& options);
  etcdserverpb::KV::Stub* kv(int client) { return kv_[client % kv_.size()].get(); }
  etcdserverpb::Lease::Stub* lease(int client) { return lease_[client % lease_.size()].get(); }
  etcdserverpb::Watch::Stub* watch(int client) { return watch_[client % watch_.size()].get(); }
  v3lockpb::Lock::Stub* lock(int client) { return lock_[client % lock_.size()].get(); }
  // Waits until every connection is ready; false after `seconds`.
  bool WaitReady(double seconds);

 private:
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<etcdserverpb::KV::Stub>> kv_;
  std::vector<std::unique_ptr<etcdserverpb::Lease::Stub>> lease_;
  std::vector<std::unique_ptr<etcdserverpb::Watch::Stub>> watch_;
  std::vector<std::unique_ptr<v3lockpb::Lock::Stub>> lock_;
};

}  // namespace leasehold::bench
