// etcdserverpb.Watch: one WatchStream per call, served from StreamQueues and all fed by the
// member's WatchHub; a ticker thread fires the streams' progress tickers
// (WatchHub::NotifyProgress), and a monitor ends require-leader streams while this member has no
// leader.
#pragma once

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/api/stream_queues.h"
#include "server/member/member.h"
#include "server/watch/watch_hub.h"

namespace leasehold::server {

// Watch is served raw (see WatchStream); the stream parses requests and encodes responses itself.
class WatchService final
    : public etcdserverpb::Watch::WithRawMethod_Watch<etcdserverpb::Watch::Service> {
 public:
  static constexpr const char kRawMethod[] = "/etcdserverpb.Watch/Watch";

  // `election_timeout`: how often to look for a leader; after three looks without one, streams that
  // require a leader end (etcd's monitorLeader). `builder`: the server this service is registered
  // with, before its BuildAndStart (the streams' completion queues are added to it).
  WatchService(Member* member, WatchHub* hub, absl::Duration election_timeout,
               grpc::ServerBuilder& builder);
  ~WatchService();
  // After the server's BuildAndStart: accepts streams.
  void Start();
  // After the server's Shutdown (which ends every stream): waits until every stream is done.
  void Stop() { streams_.Stop(); }

 private:
  Member* member_;
  WatchHub* hub_;
  StreamQueues streams_;
  absl::Notification stop_;
  std::thread ticker_;
  std::thread leader_monitor_;
};

}  // namespace leasehold::server
