// One watch, on its own thread and stream. Responses go to the handler in revision order, each
// event once: when the stream breaks (member down, restarted, or without a leader for three
// election timeouts — the stream requires one, as etcdctl's do) the watch reconnects, on the next
// endpoint, from the revision after the last one it delivered, so the handler sees no gap and no
// repeat. Fragmented responses are joined before delivery. The handler also receives the first
// `created` response and progress notifications (no events; header.revision says all events up to
// it were delivered).
//
// The watch ends when cancelled, when the object is destroyed, or when the server cancels it: the
// server's canceled response is delivered to the handler as the last one (a compacted start
// revision as etcd reports it: canceled, compact_revision set; Wait() then returns OutOfRange).
#pragma once

#include <functional>
#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "etcdserverpb/rpc.pb.h"

namespace leasehold {

class EndpointSet;

class Watch {
 public:
  using Handler = std::function<void(const etcdserverpb::WatchResponse&)>;

  // Use Client::StartWatch. `auth_token` (may be empty) goes with each stream as "token" metadata.
  Watch(EndpointSet* endpoints, etcdserverpb::WatchCreateRequest request, Handler handler,
        std::string auth_token);
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // Stops the watch; the handler is not running and will not run after this returns (unless it is
  // called from the handler itself, which is allowed).
  void Cancel();
  // Blocks until the watch has ended; returns why.
  [[nodiscard]] absl::Status Wait();
  bool done() const { return done_.HasBeenNotified(); }
  // The revision the next event will have at least (0 before the watch is created).
  int64_t next_revision() const;

 private:
  void Run();
  // Reads one stream until it breaks. Returns true when the watch is over.
  bool RunStream(
      grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>* stream);

  EndpointSet* const endpoints_;
  const etcdserverpb::WatchCreateRequest request_;
  const Handler handler_;
  const std::string auth_token_;
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t next_revision_ ABSL_GUARDED_BY(mu_) = 0;
  bool created_delivered_ = false;  // touched by the watch thread only
  absl::Status result_;             // written before done_ is notified
  absl::Notification done_;
  std::thread thread_;
};

}  // namespace leasehold
