// v3lockpb.Lock: etcd's lock service, for clients that speak gRPC but have no lock recipe of their
// own. It follows the client library's Mutex protocol (the same keys, so its locks and those taken
// by `etcdctl lock` or leasehold::Mutex are the same locks): the caller's key is enqueued by a
// proposal of this member's own and a free lock is answered as that applies; a contended one waits
// on a BlockingCalls thread, through the member's in-process client, for the keys ahead to go.
// Unlock proposes the key's deletion. As etcd does, it uses the caller's lease as it is (the caller
// keeps it alive), and a lease of 0 gets a fresh 60 s lease.
#pragma once

#include <memory>

#include "server/api/blocking_calls.h"
#include "server/member/member.h"
#include "v3lockpb/v3lock.grpc.pb.h"

namespace leasehold::server {

class LockService final : public v3lockpb::Lock::CallbackService {
 public:
  LockService(Member* member, BlockingCalls* calls) : member_(member), calls_(calls) {}

  grpc::ServerUnaryReactor* Lock(grpc::CallbackServerContext* context,
                                 const v3lockpb::LockRequest* request,
                                 v3lockpb::LockResponse* response) override;
  grpc::ServerUnaryReactor* Unlock(grpc::CallbackServerContext* context,
                                   const v3lockpb::UnlockRequest* request,
                                   v3lockpb::UnlockResponse* response) override;

 private:
  Member* const member_;
  BlockingCalls* const calls_;
};

}  // namespace leasehold::server
