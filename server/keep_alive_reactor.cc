#include "server/keep_alive_reactor.h"

namespace leasehold::server {

KeepAliveReactor::KeepAliveReactor(Member* member) : member_(member) { StartRead(&request_); }

void KeepAliveReactor::OnReadDone(bool ok) {
  absl::MutexLock lock(&mu_);
  if (!ok) {
    reads_done_ = true;
    MaybeFinishLocked();
    return;
  }
  etcdserverpb::LeaseKeepAliveResponse response;
  response.set_id(request_.id());
  // The header is filled before renewing, so its revision never runs ahead of the renewal.
  member_->FillHeader(response.mutable_header());
  response.set_ttl(member_->state_machine().leases().Renew(request_.id(), Member::NowUnixMs()));
  pending_.push_back(std::move(response));
  if (!writing_) WriteNextLocked();
  if (pending_.size() < kMaxQueuedResponses) {
    StartRead(&request_);
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
  if (read_paused_ && !reads_done_) {
    read_paused_ = false;
    StartRead(&request_);
  }
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
  if (finished_ || writing_) return;
  if (broken_) {
    finished_ = true;
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "keep-alive stream broken"));
    return;
  }
  if (reads_done_ && pending_.empty()) {
    finished_ = true;
    Finish(grpc::Status::OK);
  }
}

}  // namespace leasehold::server
