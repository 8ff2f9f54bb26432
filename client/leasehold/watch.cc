#include "client/leasehold/watch.h"

#include "client/leasehold/client.h"
#include "client/leasehold/endpoints.h"

namespace leasehold {

Watch::Watch(EndpointSet* endpoints, etcdserverpb::WatchCreateRequest request, Handler handler,
             std::string auth_token)
    : endpoints_(endpoints),
      request_(std::move(request)),
      handler_(std::move(handler)),
      auth_token_(std::move(auth_token)) {
  if (request_.start_revision() > 0) next_revision_ = request_.start_revision();
  thread_ = std::thread([this] { Run(); });
}

Watch::~Watch() { Cancel(); }

void Watch::Cancel() {
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

absl::Status Watch::Wait() {
  done_.WaitForNotification();
  return result_;
}

int64_t Watch::next_revision() const {
  absl::MutexLock lock(&mu_);
  return next_revision_;
}

void Watch::Run() {
  absl::Duration backoff = absl::Milliseconds(50);
  while (true) {
    grpc::ClientContext context;
    // etcd's require-leader: a member cut off from its leader ends the stream, and we move on.
    context.AddMetadata("hasleader", "true");
    if (!auth_token_.empty()) context.AddMetadata("token", auth_token_);
    size_t index = 0;
    const Endpoint& endpoint = endpoints_->Current(&index);
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) {
        result_ = absl::CancelledError("watch cancelled");
        break;
      }
      context_ = &context;
    }
    auto stream = endpoint.watch->Watch(&context);
    const bool over = RunStream(stream.get());
    if (over) context.TryCancel();  // the server keeps the stream open for its other watchers
    grpc::Status status = stream->Finish();
    {
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
      if (over) break;  // result_ set by RunStream; a Cancel() racing with it must not replace it
      if (cancelled_) {
        result_ = absl::CancelledError("watch cancelled");
        break;
      }
    }
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE || status.ok() ||
        status.error_code() == grpc::StatusCode::CANCELLED) {
      endpoints_->Failed(index);
    }
    // Back off before the next stream, meanwhile waiting on the next member's channel, which
    // drives its reconnection (see Endpoint::AwaitConnected); in slices, so Cancel() is seen soon.
    const Endpoint& next = endpoints_->Current(&index);
    const absl::Time until = absl::Now() + backoff;
    for (bool cancelled = false; !cancelled && absl::Now() < until;) {
      const absl::Time slice = std::min(until, absl::Now() + absl::Milliseconds(50));
      next.AwaitConnected(slice);
      absl::MutexLock lock(&mu_);
      cancelled = mu_.AwaitWithDeadline(absl::Condition(&cancelled_), slice);
    }
    backoff = std::min(backoff * 2, absl::Seconds(1));
  }
  done_.Notify();
}

bool Watch::RunStream(
    grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>* stream) {
  etcdserverpb::WatchRequest request;
  *request.mutable_create_request() = request_;
  {
    absl::MutexLock lock(&mu_);
    // Resume where the last delivered response left off.
    if (next_revision_ > 0) request.mutable_create_request()->set_start_revision(next_revision_);
  }
  if (!stream->Write(request)) return false;
  etcdserverpb::WatchResponse response, joined;
  bool joining = false;
  while (stream->Read(&response)) {
    if (response.fragment() || joining) {
      if (!joining) {
        joined = response;
      } else {
        for (auto& e : *response.mutable_events()) *joined.add_events() = std::move(e);
      }
      joining = response.fragment();
      if (joining) continue;
      joined.set_fragment(false);
      response = std::move(joined);
    }
    if (response.canceled()) {
      handler_(response);
      if (response.compact_revision() > 0) {
        result_ = absl::OutOfRangeError("etcdserver: mvcc: required revision has been compacted");
      } else {
        result_ = absl::AbortedError("watch canceled by the server: " + response.cancel_reason());
      }
      return true;
    }
    const bool first_created = response.created() && !created_delivered_;
    {
      absl::MutexLock lock(&mu_);
      const int64_t header_revision = response.header().revision();
      if (response.events_size() > 0) {
        next_revision_ = response.events(response.events_size() - 1).kv().mod_revision() + 1;
      } else if (response.created()) {
        if (next_revision_ == 0) next_revision_ = header_revision + 1;
      } else {
        // A progress notification: every event up to header_revision has been sent.
        next_revision_ = std::max(next_revision_, header_revision + 1);
      }
    }
    if (response.created() && !first_created) continue;  // a resumed stream's re-creation
    created_delivered_ = created_delivered_ || response.created();
    handler_(response);
  }
  return false;
}

}  // namespace leasehold
