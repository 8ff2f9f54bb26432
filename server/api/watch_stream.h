// One Watch stream: creates and cancels watchers on request, and writes their responses in order.
// Responses queue per stream; past kMaxQueued pieces (responses, or deliveries joined into one)
// the hub stops delivering and replays from history once half of them are written. While a
// watcher's events response waits in the queue, its later events join that response (up to
// kMaxMergedBytes) rather than queue a response each: a stream that cannot keep up writes and the
// client reads fewer, fuller messages, as etcd's catch-up sends. Each watcher still gets its events
// once, in order; a response of any other kind (created, cancelled, progress) ends the joining, so
// no event passes a progress notification or overtakes what was queued before it for its watcher. A
// client's half-close leaves the stream open, as etcd's does, until the client cancels it.
#pragma once

#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "etcdserverpb/rpc.pb.h"
#include "server/api/stream_queues.h"
#include "server/member/member.h"
#include "server/watch/watch_hub.h"

namespace leasehold::server {

// The stream is served raw (serialised bytes both ways), so that a response can be put together
// from slices shared with other watchers' responses (SharedEvents) instead of a message of its own;
// and from StreamQueues, so that thousands of open streams do not slow every other call down.
class WatchStream final : public AsyncBidiReactor, public WatchSink {
 public:
  // `require_leader`: the client sent etcd's "hasleader: true" metadata
  // (clientv3.WithRequireLeader, as `etcdctl watch` does): the stream ends with "etcdserver: no
  // leader" when this member loses its leader for a while, so the client moves to another member
  // instead of waiting in silence. `auth_token`: the stream's token (etcd's v3 auth), checked with
  // each watch created on it; `cert_user`: its client certificate's common name
  // (Member::AuthenticatedUser); `connection`: the client's address (gRPC's peer), which names
  // its connection.
  WatchStream(StreamCall* call, Member* member, WatchHub* hub, bool require_leader,
              std::string auth_token, std::string cert_user, std::string_view connection);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  bool Deliver(const WatchSpec& spec, std::vector<mvccpb::Event> events, int64_t revision) override;
  bool DeliverShared(const WatchSpec& spec, const SharedEvents& events, int64_t revision) override;
  void Progress(int64_t watch_id, int64_t revision) override;
  void RequestedProgress(int64_t revision) override;
  void Compacted(int64_t watch_id, int64_t compact_revision) override;
  void NoLeader() override;

 private:
  static constexpr size_t kMaxQueued = 1024;
  // Far below the fragment limit (which is at least kGrpcOverheadBytes) and gRPC's default 4 MiB
  // receive limit; large enough that per-message costs vanish.
  static constexpr size_t kMaxMergedBytes = 32 * 1024;
  // A queued response. An events response not yet being written is open: `parts` (its watch id,
  // header and events fields, which concatenate to one WatchResponse) may still grow. Any other
  // is `bytes`.
  struct Pending {
    grpc::ByteBuffer bytes;
    std::vector<grpc::Slice> parts;
    int64_t watch_id = 0;
    int64_t first_revision = 0;  // of its events
    int64_t revision = 0;        // its header's
    size_t size = 0;             // of `parts`
    size_t pieces = 1;           // deliveries it holds
  };
  void HandleCreate(const etcdserverpb::WatchCreateRequest& create);
  // Whether the stream's user may read what `create` watches (always, while auth is disabled).
  [[nodiscard]] absl::Status CheckPermitted(const etcdserverpb::WatchCreateRequest& create) const;
  // etcd answers a refused create in the stream, not with the call's status: created and cancelled
  // at once, with the reason.
  void RefuseCreate(int64_t watch_id, std::string reason);
  void HandleCancel(int64_t watch_id);
  bool DeliverLocked(const WatchSpec& spec, std::vector<mvccpb::Event> events, int64_t revision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues `events` (encoded as WatchResponse's events field; all of revisions from
  // `first_revision` to `revision`) for `spec`'s watcher, joining its open response when there is
  // room. False, queuing nothing, while the queue is full (FullLocked).
  bool EnqueueEventsLocked(const WatchSpec& spec, int64_t revision, const grpc::Slice& events,
                           int64_t first_revision) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Enqueue(const etcdserverpb::WatchResponse& response);
  void EnqueueLocked(const etcdserverpb::WatchResponse& response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EnqueueBytesLocked(grpc::ByteBuffer bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The encoded `header` field (tag, length, header) of a response at `revision`; reused while the
  // header stays the same, as it does across one publish's watchers.
  const grpc::Slice& HeaderFieldLocked(int64_t revision) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Past kMaxQueued pieces: nothing is queued or joined until half of them are written. A joined
  // delivery counts as a response would, so a stream that cannot keep up goes over to catching
  // up from history (one piece per watcher for many revisions) as soon as it did before joining.
  bool FullLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops every queued response but, with `keep_front`, the one being written (it must live until
  // OnWriteDone).
  void DropQueuedLocked(bool keep_front) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the stream with `status` once the response being written, if any, is out; drops the rest.
  void End(grpc::Status status);
  // etcd splits a response for a watcher that accepts fragments once it reaches this size.
  size_t FragmentLimit() const;
  etcdserverpb::WatchResponse Response(int64_t watch_id, int64_t revision) const;
  // The watcher is cancelled: what it still had to see was compacted away.
  etcdserverpb::WatchResponse CompactedResponse(int64_t watch_id, int64_t compact_revision) const;

  Member* const member_;
  WatchHub* const hub_;
  grpc::ByteBuffer request_bytes_;
  etcdserverpb::WatchRequest request_;
  absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_pieces_ ABSL_GUARDED_BY(mu_) = 0;  // the pieces of queue_'s responses
  // Responses written: queue_[i] is response number written_ + i.
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;
  // Watch id → the number of its open response. Ids absent have none.
  absl::flat_hash_map<int64_t, uint64_t> open_ ABSL_GUARDED_BY(mu_);
  etcdserverpb::ResponseHeader header_ ABSL_GUARDED_BY(mu_);  // what header_field_ encodes
  grpc::Slice header_field_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool refused_ ABSL_GUARDED_BY(mu_) = false;  // a delivery was refused: catch up once half drained
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_){grpc::StatusCode::CANCELLED,
                                                  "watch stream cancelled"};
  const bool require_leader_;
  const std::string auth_token_;
  const std::string cert_user_;  // the client certificate's common name (CertUserOf)
  // Touched only by the read callbacks, which gRPC runs one at a time.
  absl::flat_hash_set<int64_t> ids_;
  int64_t next_id_ = 0;
};

}  // namespace leasehold::server
