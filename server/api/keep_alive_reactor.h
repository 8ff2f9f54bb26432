// One LeaseKeepAlive stream. Each request is taken to the leader by the LeaderRouter: the leader
// renews (answering once the new deadline is one the next leader would honour); a follower forwards
// and relays the answer; during an election the request waits for the new leader. Each response
// carries the request's id, the granted TTL (0 for an unknown or expired lease; the stream stays
// open, as etcd's does) and a header. A request that finds no leader sure of its leadership within
// etcd's request timeout is left unanswered (a lease is never renewed by a member that might no
// longer lead); the client renews again within a third of its TTL. On half-close the stream ends OK
// once every answer is written; after a request that does not parse, it ends with INTERNAL as
// etcd's does (the stream is read as raw bytes because gRPC's typed reader reports such a request
// as a half-close). Reading pauses while too many answers wait, so a client that never reads cannot
// make the server buffer without bound.
#pragma once

#include <deque>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "etcdserverpb/rpc.pb.h"
#include "server/member/leader_router.h"
#include "server/member/member.h"

namespace leasehold::server {

class KeepAliveReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  KeepAliveReactor(Member* member, LeaderRouter* router);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;
  void OnCancel() override;

 private:
  static constexpr size_t kMaxQueuedResponses = 64;
  void OnAnswer(absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> response);
  void QueueLocked(grpc::ByteBuffer response) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReadNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Member* const member_;
  LeaderRouter* const router_;
  grpc::ByteBuffer request_bytes_;
  etcdserverpb::LeaseKeepAliveRequest request_;
  absl::Mutex mu_;
  std::deque<grpc::ByteBuffer> pending_ ABSL_GUARDED_BY(mu_);  // encoded responses
  size_t awaiting_ ABSL_GUARDED_BY(mu_) = 0;  // requests whose answer is not back yet
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;  // waiting requests stop waiting for a leader
  bool unparsed_ ABSL_GUARDED_BY(mu_) = false;   // a request did not parse: reading stopped
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace leasehold::server
