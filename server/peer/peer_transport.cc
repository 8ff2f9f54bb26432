#include "server/peer/peer_transport.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "common/url.h"
#include "leasehold/peer.grpc.pb.h"
#include "server/observability/log.h"
#include "server/observability/metrics.h"
#include "server/peer/peer_dialer.h"

namespace leasehold::server {
namespace {
// Beyond this many queued messages to one peer, new ones are dropped (the peer is down or slow).
constexpr size_t kMaxQueuedMessages = 8192;
// Batches larger than this are split, to stay well under gRPC's message size limit.
constexpr size_t kMaxBatchBytes = 8 << 20;
// A snapshot's data travels in pieces of this size.
constexpr size_t kSnapshotChunkBytes = 4 << 20;
}  // namespace

// One peer: a queue, a sender thread, and the stream it writes to (re-opened after a failure).
class PeerTransport::Peer {
 public:
  Peer(PeerTransport* transport, uint64_t id) : transport_(transport), id_(id) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Peer() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      if (context_ != nullptr) context_->TryCancel();
    }
    thread_.join();
  }

  void Enqueue(std::vector<raftpb::Message>& messages, size_t begin, size_t end) {
    absl::MutexLock lock(&mu_);
    size_t i = begin;
    for (; i < end && queue_.size() < kMaxQueuedMessages; ++i)
      queue_.push_back(std::move(messages[i]));
    if (i < end) {
      Metrics::Get().CountPeerSendFailures(absl::StrCat(absl::Hex(id_)), end - i);  // dropped
      for (; i < end; ++i) CountIfHeartbeat(messages[i]);
    }
  }

  std::shared_ptr<grpc::Channel> Channel() {
    absl::MutexLock lock(&mu_);
    return ChannelLocked();
  }

 private:
  static void CountIfHeartbeat(const raftpb::Message& m) {
    if (m.type() == raftpb::MSG_HEARTBEAT) Metrics::Get().CountHeartbeatSendFailure();
  }

  std::shared_ptr<grpc::Channel> ChannelLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::string url = transport_->UrlOf(id_);
    auto address = GrpcAddressOfUrl(url);
    if (!address.ok()) return nullptr;
    if (channel_ == nullptr || url != url_) {
      grpc::ChannelArguments args;
      args.SetMaxSendMessageSize(-1);
      args.SetMaxReceiveMessageSize(-1);
      // Reconnect quickly after a peer restarts: elections depend on it.
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
      args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
      auto channel = DialPeer(url, transport_->tls_, args);
      if (!channel.ok()) return nullptr;
      channel_ = *std::move(channel);
      url_ = url;
    }
    return channel_;
  }

  void Run() {
    std::vector<raftpb::Message> batch;
    std::unique_ptr<peerpb::RaftPeer::Stub> stub;
    std::unique_ptr<grpc::ClientWriter<peerpb::MessageBatch>> writer;
    peerpb::DeliverAck ack;
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](Peer* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
              return self->stopping_ || !self->queue_.empty();
            },
            this));
        if (stopping_) break;
        batch.swap(queue_);
        if (writer == nullptr) {
          std::shared_ptr<grpc::Channel> channel = ChannelLocked();
          if (channel == nullptr) {
            for (const auto& m : batch) {
              if (m.type() == raftpb::MSG_SNAPSHOT && transport_->report_snapshot_)
                transport_->report_snapshot_(id_, false);
            }
            batch.clear();
            continue;
          }
          stub = peerpb::RaftPeer::NewStub(channel);
          context_ = std::make_unique<grpc::ClientContext>();
          writer = stub->Deliver(context_.get(), &ack);
        }
      }
      // Snapshots leave the batch for a call of their own; Raft does not need them in order.
      std::vector<raftpb::Message> snapshots;
      for (auto& m : batch) {
        if (m.type() == raftpb::MSG_SNAPSHOT) snapshots.push_back(std::move(m));
      }
      if (!snapshots.empty()) {
        std::erase_if(batch,
                      [](const raftpb::Message& m) { return m.type() == raftpb::MSG_SNAPSHOT; });
        for (auto& m : snapshots) {
          const bool delivered = SendSnapshot(stub.get(), std::move(m));
          if (transport_->report_snapshot_) transport_->report_snapshot_(id_, delivered);
        }
      }
      bool ok = true;
      const size_t batched = batch.size();
      for (size_t start = 0; start < batch.size() && ok;) {
        peerpb::MessageBatch out;
        out.set_cluster_id(transport_->cluster_id_);
        out.set_from(transport_->self_id_);
        size_t bytes = 0;
        for (; start < batch.size() && (out.messages_size() == 0 || bytes < kMaxBatchBytes);
             ++start) {
          bytes += batch[start].ByteSizeLong();
          *out.add_messages() = std::move(batch[start]);
        }
        ok = writer->Write(out);
        if (ok) Metrics::Get().CountPeerSentBytes(peer_hex_, bytes);
      }
      batch.clear();
      if (ok && !active_) {
        active_ = true;
        LogInfo("peer became active", {{"peer-id", peer_hex_}});
      }
      if (ok != shown_active_) {
        shown_active_ = ok;
        Metrics::Get().SetPeerActive(absl::StrCat(absl::Hex(transport_->self_id_)), peer_hex_, ok);
      }
      if (!ok) {
        const grpc::Status status = writer->Finish();
        // Once per outage, as etcd logs it: a peer refusing our certificate, down, or unreachable.
        if (active_) {
          active_ = false;
          LogWarn("peer became inactive (message send to peer failed)",
                  {{"peer-id", absl::StrCat(absl::Hex(id_))}, {"error", status.error_message()}});
        }
        if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
            status.error_message() == kRemovedMemberRefusal && transport_->report_removed_ &&
            !transport_->removed_reported_.exchange(true)) {
          transport_->report_removed_();
        }
        absl::MutexLock lock(&mu_);
        writer.reset();
        context_.reset();
        // The peer is down: drop what queued meanwhile and retry a little later.
        mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(100));
        // The failed stream's batch counts whole (how much of it arrived is not known).
        Metrics::Get().CountPeerSendFailures(absl::StrCat(absl::Hex(id_)), batched + queue_.size());
        for (const raftpb::Message& m : queue_) CountIfHeartbeat(m);
        queue_.clear();
      }
    }
    if (writer != nullptr) {
      writer->WritesDone();
      writer->Finish().IgnoreError();
    }
  }

  // Streams one snapshot message in chunks; true once the peer acknowledged the whole of it.
  bool SendSnapshot(peerpb::RaftPeer::Stub* stub, raftpb::Message message) {
    std::string data = std::move(*message.mutable_snapshot()->mutable_data());
    message.mutable_snapshot()->clear_data();
    grpc::ClientContext context;
    peerpb::DeliverAck ack;
    auto writer = stub->SendSnapshot(&context, &ack);
    peerpb::SnapshotChunk first;
    first.set_cluster_id(transport_->cluster_id_);
    *first.mutable_message() = std::move(message);
    bool ok = writer->Write(first);
    for (size_t offset = 0; ok && offset < data.size(); offset += kSnapshotChunkBytes) {
      peerpb::SnapshotChunk chunk;
      chunk.set_data(data.substr(offset, kSnapshotChunkBytes));
      ok = writer->Write(chunk);
    }
    if (ok) writer->WritesDone();
    const grpc::Status status = writer->Finish();
    if (!ok || !status.ok()) {
      LogWarn("snapshot not delivered", {{"error", status.error_message()}});
      return false;
    }
    return true;
  }

  PeerTransport* const transport_;
  bool active_ = true;         // the last batch went out (the sender thread's own)
  bool shown_active_ = false;  // what etcd_network_active_peers says of this peer
  const uint64_t id_;
  const std::string peer_hex_ = absl::StrCat(absl::Hex(id_));
  absl::Mutex mu_;
  std::vector<raftpb::Message> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<grpc::Channel> channel_ ABSL_GUARDED_BY(mu_);
  std::string url_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

PeerTransport::PeerTransport(uint64_t self_id, uint64_t cluster_id,
                             const storage::MemberTable* members,
                             std::map<uint64_t, std::string> initial_peer_urls, TlsFiles tls,
                             SnapshotReport report_snapshot, RemovedReport report_removed)
    : self_id_(self_id),
      cluster_id_(cluster_id),
      members_(members),
      initial_peer_urls_(std::move(initial_peer_urls)),
      tls_(std::move(tls)),
      report_snapshot_(std::move(report_snapshot)),
      report_removed_(std::move(report_removed)) {}

PeerTransport::~PeerTransport() { Stop(); }

void PeerTransport::Stop() {
  std::map<uint64_t, std::unique_ptr<Peer>> peers;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    peers.swap(peers_);
  }
  peers.clear();  // joins the sender threads, outside mu_
}

std::string PeerTransport::UrlOf(uint64_t id) const {
  if (auto member = members_->Find(id); member && member->peer_urls_size() > 0)
    return member->peer_urls(0);
  if (auto it = initial_peer_urls_.find(id); it != initial_peer_urls_.end()) return it->second;
  return "";
}

PeerTransport::Peer* PeerTransport::PeerFor(uint64_t id) {
  auto& peer = peers_[id];
  if (peer == nullptr) peer = std::make_unique<Peer>(this, id);
  return peer.get();
}

void PeerTransport::Send(std::vector<raftpb::Message> messages) {
  absl::MutexLock lock(&mu_);
  if (stopped_) return;
  // Messages keep their order per destination; consecutive runs to one peer go in one call.
  for (size_t begin = 0; begin < messages.size();) {
    const uint64_t to = messages[begin].to();
    size_t end = begin + 1;
    while (end < messages.size() && messages[end].to() == to) ++end;
    if (to != self_id_ && to != 0) PeerFor(to)->Enqueue(messages, begin, end);
    begin = end;
  }
}

std::shared_ptr<grpc::Channel> PeerTransport::ChannelTo(uint64_t id) {
  absl::MutexLock lock(&mu_);
  if (stopped_ || id == 0) return nullptr;
  return PeerFor(id)->Channel();
}

int PeerTransport::ActivePeers() {
  int active = 0;
  for (const internalpb::MemberRecord& member : members_->List()) {
    if (member.id() == self_id_) continue;
    std::shared_ptr<grpc::Channel> channel = ChannelTo(member.id());
    if (channel != nullptr && channel->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY)
      ++active;
  }
  return active;
}

}  // namespace leasehold::server
