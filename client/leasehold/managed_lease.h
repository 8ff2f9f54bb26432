// A lease kept alive in the background, with an honest lost-lease signal.
//
// One keep-alive stream renews the lease every TTL/3. Every acknowledged renewal promises that the
// lease lives at least TTL after the moment its request was *sent* (the server's guarantee), so
// confirmed_until() = send time of the last acknowledged renewal + TTL. The lease is declared lost,
// once and for good, the moment any of these happens — never later:
//   - the server answers a renewal with TTL 0 (the lease was revoked or has expired);
//   - confirmed_until() passes without a newer acknowledgement (members unreachable, paused, or
//     without a leader): past that instant the server may revoke it at any time.
// lost() is a cancellation token raised then, with the reason; code doing work that needs the lease
// (a lock holder, a registered service) should stop when it fires. A lost lease may in fact still
// exist on the server; what is lost is the proof that it does.
//
// If the stream breaks the renewer reconnects, to the next endpoint, at once and retries until the
// deadline. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/leasehold/cancellation.h"
#include "etcdserverpb/rpc.grpc.pb.h"

namespace leasehold {

class Client;

class ManagedLease {
 public:
  // Grants a new lease of `ttl_seconds` and keeps it alive.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ManagedLease>> Grant(Client* client,
                                                                           int64_t ttl_seconds);
  // Keeps alive a lease that already exists (renewing it once first; NotFound if it does not
  // exist).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ManagedLease>> Keep(Client* client,
                                                                          int64_t lease_id);

  // Stops renewing and revokes the lease (best effort) unless Orphan() was called.
  ~ManagedLease();

  int64_t id() const { return id_; }
  int64_t ttl_seconds() const;
  // Until when the server has promised the lease lives.
  absl::Time confirmed_until() const;
  // Raised once the lease is lost (see above). Not raised by Revoke, Orphan or destruction.
  CancellationToken lost() const { return lost_source_.token(); }

  // Stops renewing and revokes the lease; its keys are deleted.
  [[nodiscard]] absl::Status Revoke();
  // Stops renewing without revoking: the lease runs out after its TTL.
  void Orphan();

 private:
  ManagedLease(Client* client, int64_t id, int64_t ttl_seconds, absl::Time confirmed_until);
  void Run();
  // Reads one stream's responses until it breaks.
  void ReadResponses(grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                                              etcdserverpb::LeaseKeepAliveResponse>* stream);
  // Sends renewals on one stream until it breaks, stalls (returns true: fail over) or the lease is
  // stopped or lost (returns false).
  bool Renew(grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                                      etcdserverpb::LeaseKeepAliveResponse>* stream);
  void Stop();
  void LoseLocked(const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Client* const client_;
  const int64_t id_;
  CancellationSource lost_source_;
  mutable absl::Mutex mu_;
  int64_t ttl_seconds_ ABSL_GUARDED_BY(mu_);
  absl::Time confirmed_until_ ABSL_GUARDED_BY(mu_);
  absl::Time next_send_ ABSL_GUARDED_BY(mu_);
  absl::Time sent_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();  // of the unanswered request
  bool awaiting_ ABSL_GUARDED_BY(mu_) = false;
  bool stream_broken_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  std::string lost_reason_ ABSL_GUARDED_BY(mu_);
  uint64_t answers_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace leasehold
