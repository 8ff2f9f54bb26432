#include "client/leasehold/endpoints.h"

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace leasehold {
namespace {

std::unique_ptr<Endpoint> MakeEndpoint(std::string target, std::shared_ptr<grpc::Channel> channel) {
  auto e = std::make_unique<Endpoint>();
  e->target = std::move(target);
  e->channel = std::move(channel);
  e->kv = etcdserverpb::KV::NewStub(e->channel);
  e->lease = etcdserverpb::Lease::NewStub(e->channel);
  e->watch = etcdserverpb::Watch::NewStub(e->channel);
  e->cluster = etcdserverpb::Cluster::NewStub(e->channel);
  return e;
}

}  // namespace

void Endpoint::AwaitConnected(absl::Time until) const {
  while (absl::Now() < until) {
    const grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY || state == GRPC_CHANNEL_SHUTDOWN) return;
    if (!channel->WaitForStateChange(state, absl::ToChronoTime(until))) return;  // timed out
  }
}

EndpointSet::EndpointSet(const std::vector<std::string>& targets) {
  for (const auto& t : targets) {
    std::string target(absl::StripPrefix(t, "http://"));
    grpc::ChannelArguments args;
    // Reconnect quickly after a member restarts; the defaults back off up to two minutes.
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetMaxReceiveMessageSize(std::numeric_limits<int>::max());
    // Distinct channels per endpoint even when targets repeat.
    args.SetInt("leasehold.endpoint_index", static_cast<int>(endpoints_.size()));
    endpoints_.push_back(MakeEndpoint(
        target, grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args)));
  }
}

EndpointSet::EndpointSet(std::shared_ptr<grpc::Channel> channel) {
  endpoints_.push_back(MakeEndpoint("in-process", std::move(channel)));
}

const Endpoint& EndpointSet::Current(size_t* index) const {
  absl::MutexLock lock(&mu_);
  *index = current_;
  return *endpoints_[current_];
}

void EndpointSet::Failed(size_t index) {
  absl::MutexLock lock(&mu_);
  if (current_ == index) current_ = (current_ + 1) % endpoints_.size();
}

bool RetryPolicy::ShouldFailover(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE;
}

bool RetryPolicy::MayResend(const grpc::Status& status, bool idempotent) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  if (idempotent) return true;
  return status.error_message() == "etcdserver: no leader" ||
         status.error_message() == "etcdserver: rpc not supported for learner" ||
         absl::StartsWith(status.error_message(), "failed to connect to all addresses");
}

}  // namespace leasehold
