// The KV and Lease stubs of a list of etcd endpoints, one channel each, for test clients that try
// the endpoints in turn: kv(i) and lease(i) take i modulo their number.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "etcdserverpb/rpc.grpc.pb.h"

namespace leasehold::testing {

class EndpointStubs {
 public:
  explicit EndpointStubs(const std::vector<std::string>& endpoints) {
    for (const auto& e : endpoints) {
      auto channel = grpc::CreateChannel(e, grpc::InsecureChannelCredentials());
      kv_.push_back(etcdserverpb::KV::NewStub(channel));
      lease_.push_back(etcdserverpb::Lease::NewStub(channel));
    }
  }
  size_t size() const { return kv_.size(); }
  etcdserverpb::KV::Stub* kv(size_t i) { return kv_[i % kv_.size()].get(); }
  etcdserverpb::Lease::Stub* lease(size_t i) { return lease_[i % lease_.size()].get(); }

 private:
  std::vector<std::unique_ptr<etcdserverpb::KV::Stub>> kv_;
  std::vector<std::unique_ptr<etcdserverpb::Lease::Stub>> lease_;
};

}  // namespace leasehold::testing
