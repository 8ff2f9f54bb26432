#include "client/leasehold/managed_lease.h"

#include "client/leasehold/client.h"

namespace leasehold {
namespace {

// How long a renewal may go unanswered before the stream is presumed stuck (a paused or partitioned
// member) and the renewer moves to another endpoint.
absl::Duration AnswerTimeout(int64_t ttl_seconds) {
  return std::min(absl::Seconds(1), absl::Seconds(ttl_seconds) / 3);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ManagedLease>> ManagedLease::Grant(Client* client,
                                                                  int64_t ttl_seconds) {
  const absl::Time sent = absl::Now();
  auto granted = client->LeaseGrant(ttl_seconds);
  if (!granted.ok()) return granted.status();
  if (!granted->error().empty()) return absl::FailedPreconditionError(granted->error());
  return std::unique_ptr<ManagedLease>(new ManagedLease(client, granted->id(), granted->ttl(),
                                                        sent + absl::Seconds(granted->ttl())));
}

absl::StatusOr<std::unique_ptr<ManagedLease>> ManagedLease::Keep(Client* client, int64_t lease_id) {
  // One renewal on a short-lived stream tells the TTL and starts the promise.
  const absl::Time sent = absl::Now();
  size_t index = 0;
  const Endpoint& endpoint = client->endpoints().Current(&index);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(sent + client->request_timeout()));
  client->PrepareContext(&context);
  auto stream = endpoint.lease->LeaseKeepAlive(&context);
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseKeepAliveResponse response;
  const bool answered = stream->Write(request) && stream->Read(&response);
  context.TryCancel();
  grpc::Status status = stream->Finish();
  if (!answered) {
    if (RetryPolicy::ShouldFailover(status)) client->endpoints().Failed(index);
    return status.ok() ? absl::UnavailableError("keep-alive stream closed") : FromGrpc(status);
  }
  if (response.ttl() <= 0) return absl::NotFoundError("etcdserver: requested lease not found");
  return std::unique_ptr<ManagedLease>(
      new ManagedLease(client, lease_id, response.ttl(), sent + absl::Seconds(response.ttl())));
}

ManagedLease::ManagedLease(Client* client, int64_t id, int64_t ttl_seconds,
                           absl::Time confirmed_until)
    : client_(client),
      id_(id),
      ttl_seconds_(ttl_seconds),
      confirmed_until_(confirmed_until),
      next_send_(absl::Now() + absl::Seconds(ttl_seconds) / 3) {
  thread_ = std::thread([this] { Run(); });
}

ManagedLease::~ManagedLease() {
  bool revoke;
  {
    absl::MutexLock lock(&mu_);
    revoke = !stopping_ && !lost_;
  }
  Stop();
  if (revoke)
    client_->LeaseRevoke(id_).IgnoreError();  // best effort: it runs out after its TTL anyway
}

int64_t ManagedLease::ttl_seconds() const {
  absl::MutexLock lock(&mu_);
  return ttl_seconds_;
}

absl::Time ManagedLease::confirmed_until() const {
  absl::MutexLock lock(&mu_);
  return confirmed_until_;
}

absl::Status ManagedLease::Revoke() {
  Stop();
  auto revoked = client_->LeaseRevoke(id_);
  return revoked.status();
}

void ManagedLease::Orphan() { Stop(); }

void ManagedLease::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ManagedLease::LoseLocked(const std::string& reason) {
  if (lost_) return;
  lost_ = true;
  lost_reason_ = reason;  // raised by Run, outside the lock, so handlers may call back into us
}

void ManagedLease::ReadResponses(
    grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                             etcdserverpb::LeaseKeepAliveResponse>* stream) {
  etcdserverpb::LeaseKeepAliveResponse response;
  while (stream->Read(&response)) {
    absl::MutexLock lock(&mu_);
    if (response.ttl() <= 0) {
      LoseLocked("lease " + std::to_string(id_) + " was revoked or has expired");
      break;
    }
    if (!awaiting_)
      continue;  // an answer to a request abandoned on an earlier stream cannot come here
    awaiting_ = false;
    ++answers_;
    ttl_seconds_ = response.ttl();
    confirmed_until_ = std::max(confirmed_until_, sent_at_ + absl::Seconds(response.ttl()));
    next_send_ = absl::Now() + absl::Seconds(response.ttl()) / 3;
  }
  absl::MutexLock lock(&mu_);
  stream_broken_ = true;
}

void ManagedLease::Run() {
  while (true) {
    size_t index = 0;
    const Endpoint& endpoint = client_->endpoints().Current(&index);
    grpc::ClientContext context;
    client_->PrepareContext(&context);
    auto stream = endpoint.lease->LeaseKeepAlive(&context);
    {
      absl::MutexLock lock(&mu_);
      stream_broken_ = false;
      awaiting_ = false;
    }
    std::thread reader([this, s = stream.get()] { ReadResponses(s); });
    const bool failover = Renew(stream.get());
    context.TryCancel();
    reader.join();
    stream->Finish();
    std::string lost_reason;
    {
      absl::MutexLock lock(&mu_);
      if (!stopping_ && !lost_ && failover) {
        client_->endpoints().Failed(index);
        next_send_ = absl::Now();  // renew at once on the next stream
      }
      // A short pause so that an endpoint refusing connections is not hammered; never past the
      // deadline.
      if (!stopping_ && !lost_) {
        mu_.AwaitWithDeadline(absl::Condition(&stopping_),
                              std::min(absl::Now() + absl::Milliseconds(50), confirmed_until_));
        if (absl::Now() >= confirmed_until_) {
          LoseLocked("lease " + std::to_string(id_) + " could not be renewed before its deadline");
        }
      }
      if (stopping_) return;
      if (lost_) lost_reason = lost_reason_;
    }
    if (!lost_reason.empty()) {
      lost_source_.Cancel(lost_reason);
      return;
    }
  }
}

bool ManagedLease::Renew(grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                                                  etcdserverpb::LeaseKeepAliveResponse>* stream) {
  absl::MutexLock lock(&mu_);
  while (!stopping_ && !lost_ && !stream_broken_) {
    const absl::Time now = absl::Now();
    if (now >= confirmed_until_) {
      LoseLocked("lease " + std::to_string(id_) + " could not be renewed before its deadline");
      return false;
    }
    if (awaiting_ && now >= sent_at_ + AnswerTimeout(ttl_seconds_)) {
      return true;  // the member holds the renewal without answering: try another
    }
    if (!awaiting_ && now >= next_send_) {
      etcdserverpb::LeaseKeepAliveRequest request;
      request.set_id(id_);
      awaiting_ = true;
      sent_at_ = now;
      mu_.Unlock();
      const bool written = stream->Write(request);
      mu_.Lock();
      if (!written) return true;
      continue;
    }
    const absl::Time wake =
        std::min(confirmed_until_, awaiting_ ? sent_at_ + AnswerTimeout(ttl_seconds_) : next_send_);
    const uint64_t answers = answers_;
    auto changed = [this, answers]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || lost_ || stream_broken_ || answers_ != answers;
    };
    mu_.AwaitWithDeadline(absl::Condition(&changed), wake);
  }
  return stream_broken_ && !stopping_ && !lost_;
}

}  // namespace leasehold
