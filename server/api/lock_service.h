// v3lockpb.Lock: etcd's lock service, for clients that speak gRPC but have no lock recipe of their
// own. It follows the client library's Mutex protocol (the same keys, so its locks and those taken
// by `etcdctl lock` or leasehold::Mutex are the same locks): the caller's key is enqueued by a
// proposal of this member's own and a free lock is answered as that applies; a contended one waits
// in LockWaiters and is answered as the release before it applies.
// Unlock proposes the key's deletion. As etcd does, it uses the caller's lease as it is (the caller
// keeps it alive), and a lease of 0 gets a fresh 60 s lease.
#pragma once

#include <memory>

#include "server/api/blocking_calls.h"
#include "server/api/lock_waiters.h"
#include "server/member/member.h"
#include "v3lockpb/v3lock.grpc.pb.h"

namespace leasehold::server {

class LockService final : public v3lockpb::Lock::CallbackService {
 public:
  // `calls` bounds how many Lock calls run at once (and lets shutdown wait for them).
  LockService(Member* member, BlockingCalls* calls, LockWaiters* waiters)
      : member_(member), calls_(calls), waiters_(waiters) {}

  grpc::ServerUnaryReactor* Lock(grpc::CallbackServerContext* context,
                                 const v3lockpb::LockRequest* request,
                                 v3lockpb::LockResponse* response) override;
  grpc::ServerUnaryReactor* Unlock(grpc::CallbackServerContext* context,
                                   const v3lockpb::UnlockRequest* request,
                                   v3lockpb::UnlockResponse* response) override;

 private:
  Member* const member_;
  BlockingCalls* const calls_;
  LockWaiters* const waiters_;
};

}  // namespace leasehold::server
