#include "client/leasehold/mutex.h"

#include "absl/strings/str_format.h"
#include "client/leasehold/client.h"
#include "client/leasehold/queue_wait.h"

namespace leasehold {

Mutex::Mutex(Client* client, std::string name, int64_t lease_id)
    : client_(client), prefix_(PrefixOf(name)), key_(KeyOf(name, lease_id)), lease_id_(lease_id) {}

std::string Mutex::KeyOf(const std::string& name, int64_t lease_id) {
  return absl::StrFormat("%s/%x", name, lease_id);
}

etcdserverpb::Compare Mutex::HeldBy(const LockToken& token) {
  return CreateRevisionIs(token.key, token.fencing_token);
}

absl::StatusOr<LockToken> Mutex::Lock(absl::Duration timeout, const CancellationToken& cancel) {
  const absl::Time deadline = absl::Now() + timeout;
  auto place = Enqueue(client_, prefix_, key_, "", lease_id_);
  if (!place.ok()) return place.status();
  if (place->first) return LockToken{key_, place->create_revision, lease_id_, place->revision};
  auto held_at = WaitUntilFirst(client_, prefix_, key_, place->create_revision, deadline, cancel);
  if (held_at.ok()) return LockToken{key_, place->create_revision, lease_id_, *held_at};
  // Leave the queue so that those behind us are not held up by a key nobody waits on.
  if (!absl::IsFailedPrecondition(held_at.status())) Unlock().IgnoreError();
  return held_at.status();
}

absl::Status Mutex::Unlock() { return client_->Delete(key_).status(); }

}  // namespace leasehold
