// PeerTransport: carries this member's outgoing Raft messages to the other members over gRPC
// streams (RaftPeer.Deliver), one sender thread and one stream per peer, and hands out channels to
// peers for the lease calls a follower forwards to the leader.
//
// Messages to a peer that is down or slow are dropped rather than queued without bound: Raft
// retries what matters. Snapshots go on their own call, in chunks, and their delivery (or loss) is
// reported back so Raft can send another. Peer addresses come from the replicated member table,
// falling back to the ones given at start (--initial-cluster), so a member can answer the leader
// before it has applied the entries that name it.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/peer/message_sender.h"
#include "server/tls/tls_files.h"
#include "storage/cluster/member_table.h"

namespace leasehold::server {

// How a member refuses the messages of one removed from the cluster (RaftPeer.Deliver ends with
// FailedPrecondition and this message), as etcd's peers answer 410 Gone: the sender learns it is
// out even if it missed its own removal while it was down.
inline constexpr std::string_view kRemovedMemberRefusal =
    "the member has been permanently removed from the cluster";

class PeerTransport : public MessageSender {
 public:
  // Told whether a snapshot message reached a peer (Raft's ReportSnapshot). Called on a sender
  // thread.
  using SnapshotReport = std::function<void(uint64_t to, bool delivered)>;
  // Told, once, that a peer refused this member as removed from the cluster. Called on a sender
  // thread.
  using RemovedReport = std::function<void()>;

  // `members` is not owned and must outlive this object. `initial_peer_urls`: member id -> URL.
  // `tls`: the certificates for https:// peer URLs (--peer-*; see peer_dialer.h).
  PeerTransport(uint64_t self_id, uint64_t cluster_id, const storage::MemberTable* members,
                std::map<uint64_t, std::string> initial_peer_urls, TlsFiles tls,
                SnapshotReport report_snapshot, RemovedReport report_removed);
  ~PeerTransport() override;

  void Send(std::vector<raftpb::Message> messages) override;
  // A channel to member `id`'s peer port, or null when its address is unknown.
  std::shared_ptr<grpc::Channel> ChannelTo(uint64_t id);
  // How many of the other members this one is connected to now (etcd's "active peers"); asking
  // starts connecting to the others.
  int ActivePeers();
  // Stops every sender thread; later Sends are dropped.
  void Stop();

 private:
  class Peer;
  // The peer URL of member `id`, or empty.
  std::string UrlOf(uint64_t id) const;
  Peer* PeerFor(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t self_id_;
  const uint64_t cluster_id_;
  const storage::MemberTable* const members_;
  const std::map<uint64_t, std::string> initial_peer_urls_;
  const TlsFiles tls_;
  const SnapshotReport report_snapshot_;
  const RemovedReport report_removed_;
  std::atomic<bool> removed_reported_{false};
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::map<uint64_t, std::unique_ptr<Peer>> peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasehold::server
