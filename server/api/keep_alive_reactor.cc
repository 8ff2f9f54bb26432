#include "server/api/keep_alive_reactor.h"

#include <grpcpp/impl/codegen/proto_utils.h>

#include "server/api/unmarshal_error.h"

namespace leasehold::server {

KeepAliveReactor::KeepAliveReactor(Member* member, LeaderRouter* router)
    : member_(member), router_(router) {
  StartRead(&request_bytes_);
}

void KeepAliveReactor::OnDone() {
  // Callbacks may still be leaving mu_ on another thread; wait for them before deleting.
  { absl::MutexLock lock(&mu_); }
  delete this;
}

void KeepAliveReactor::OnCancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
}

void KeepAliveReactor::OnReadDone(bool ok) {
  absl::MutexLock lock(&mu_);
  if (!ok) {
    reads_done_ = true;
    MaybeFinishLocked();
    return;
  }
  if (!grpc::SerializationTraits<etcdserverpb::LeaseKeepAliveRequest>::Deserialize(&request_bytes_,
                                                                                   &request_)
           .ok()) {
    // Answers to earlier requests still go out; then the stream ends with the error.
    reads_done_ = true;
    unparsed_ = true;
    MaybeFinishLocked();
    return;
  }
  auto on_answer = [this](absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> response) {
    OnAnswer(std::move(response));
  };
  auto wanted = [this] {
    absl::MutexLock lock(&mu_);
    return !broken_ && !cancelled_;
  };
  ++awaiting_;
  // The answer (or a retry's question) may come inline and takes mu_ itself.
  mu_.Unlock();
  router_->RenewLease(request_, std::move(wanted), std::move(on_answer));
  mu_.Lock();
  ReadNextLocked();
}

void KeepAliveReactor::OnAnswer(absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> response) {
  grpc::ByteBuffer encoded;
  if (response.ok()) {
    member_->FillHeader(response->mutable_header());
    bool own_buffer;
    if (!grpc::SerializationTraits<etcdserverpb::LeaseKeepAliveResponse>::Serialize(
             *response, &encoded, &own_buffer)
             .ok()) {
      response = absl::InternalError("cannot encode a keep-alive response");
    }
  }
  absl::MutexLock lock(&mu_);
  --awaiting_;
  if (response.ok() && !broken_) QueueLocked(std::move(encoded));
  if (read_paused_) ReadNextLocked();
  MaybeFinishLocked();
}

void KeepAliveReactor::QueueLocked(grpc::ByteBuffer response) {
  pending_.push_back(std::move(response));
  if (!writing_) WriteNextLocked();
}

void KeepAliveReactor::ReadNextLocked() {
  if (reads_done_ || broken_) return;
  if (pending_.size() + awaiting_ < kMaxQueuedResponses) {
    read_paused_ = false;
    StartRead(&request_bytes_);
  } else {
    read_paused_ = true;
  }
}

void KeepAliveReactor::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (!ok) {
    broken_ = true;
    pending_.clear();
    MaybeFinishLocked();
    return;
  }
  pending_.pop_front();
  if (read_paused_) ReadNextLocked();
  if (!pending_.empty()) {
    WriteNextLocked();
  } else {
    MaybeFinishLocked();
  }
}

void KeepAliveReactor::WriteNextLocked() {
  writing_ = true;
  StartWrite(&pending_.front());
}

void KeepAliveReactor::MaybeFinishLocked() {
  if (finished_ || writing_ || awaiting_ > 0) return;
  if (broken_) {
    finished_ = true;
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "keep-alive stream broken"));
    return;
  }
  if (reads_done_ && pending_.empty()) {
    finished_ = true;
    Finish(unparsed_ ? grpc::Status(grpc::StatusCode::INTERNAL,
                                    StreamUnmarshalError("etcdserverpb.LeaseKeepAliveRequest"))
                     : grpc::Status::OK);
  }
}

}  // namespace leasehold::server
