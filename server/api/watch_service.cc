#include "server/api/watch_service.h"

#include "server/api/caller.h"
#include "server/api/grpc_status.h"
#include "server/api/watch_stream.h"

namespace leasehold::server {

namespace {
// Each completion scans the operations outstanding on its queue (see StreamQueues): 10,000 streams
// over 8 queues keep that scan to about 2,500 entries (a read and a done notification per stream).
constexpr int kStreamQueues = 8;

// A stream refused before it starts (Member::LearnerRefusal): finishes at once, reading nothing.
class RefusedStream final : public AsyncBidiReactor {
 public:
  RefusedStream(StreamCall* call, grpc::Status status) : AsyncBidiReactor(call) {
    Finish(std::move(status));
  }
  void OnReadDone(bool) override {}
  void OnWriteDone(bool) override {}
  void OnDone() override { delete this; }
};
}  // namespace

WatchService::WatchService(Member* member, WatchHub* hub, absl::Duration election_timeout,
                           grpc::ServerBuilder& builder)
    : member_(member), hub_(hub), streams_(builder, kStreamQueues) {
  ticker_ = std::thread([this] {
    while (!stop_.WaitForNotificationWithTimeout(hub_->NotifyProgress())) {
    }
  });
  leader_monitor_ = std::thread([this, election_timeout] {
    constexpr int kLooksWithoutLeader = 3;  // etcd's maxNoLeaderCnt
    int without = 0;
    while (!stop_.WaitForNotificationWithTimeout(election_timeout)) {
      without = member_->proposer().leader_id() == 0 ? without + 1 : 0;
      if (without >= kLooksWithoutLeader) hub_->NotifyNoLeader();
    }
  });
}

WatchService::~WatchService() {
  stop_.Notify();
  ticker_.join();
  leader_monitor_.join();
}

void WatchService::Start() {
  streams_.Start(
      [this](grpc::ServerContext* context, StreamQueues::Stream* stream,
             grpc::CompletionQueue* call_queue, grpc::ServerCompletionQueue* announce_queue,
             void* tag) { RequestWatch(context, stream, call_queue, announce_queue, tag); },
      [this](StreamCall* call, grpc::ServerContext& context) -> AsyncBidiReactor* {
        if (absl::Status st = member_->LearnerRefusal(); !st.ok())
          return new RefusedStream(call, ToGrpcStatus(st));
        const auto& metadata = context.client_metadata();
        auto it = metadata.find("hasleader");
        const bool require_leader = it != metadata.end() && it->second == "true";
        // The certificate's name is looked up once per stream, and only where it can matter.
        std::string cert_user =
            member_->config().client_cert_auth ? CertUserOf(context) : std::string();
        return new WatchStream(call, member_, hub_, require_leader, AuthTokenOf(context),
                               std::move(cert_user), context.peer());
      });
}

}  // namespace leasehold::server
