// A distributed lock with a fencing token, on etcd's lock protocol (the one `etcdctl lock` and
// etcd's concurrency package use, so Leasehold's and etcd's lockers interoperate): each contender
// puts
// `<name>/<lease id in hex>` under its lease; the one with the lowest create revision holds the
// lock; the others each wait, by watch, for the deletion of the key just ahead of them.
//
// What holding the lock means — liveness, not safety. The lock is held while the holder's key
// exists, i.e. until Unlock or the end of its lease. A holder that pauses (GC, SIGSTOP, a slow
// disk) longer than its lease's TTL loses the lock without knowing it, and another contender takes
// it. So never trust "I hold the lock" alone for a write that matters: fence it. The token is the
// key's create_revision; it is unique and strictly increasing across successive holders of one
// lock. Two ways to fence:
//   - writes to the same cluster: guard the Txn with HeldBy(token) (create_revision of the lock key
//     equals the token) — it fails once the lock has passed on, however long the holder slept;
//   - writes elsewhere: send the token with the write and let the resource refuse any token lower
//     than the highest it has seen (see examples/fenced_write.cc).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/leasehold/cancellation.h"
#include "etcdserverpb/rpc.pb.h"

namespace leasehold {

class Client;

struct LockToken {
  std::string key;        // the lock key this holder owns
  int64_t fencing_token;  // the key's create_revision
  int64_t lease_id;
  int64_t revision;  // the store revision at which the lock was found held
};

class Mutex {
 public:
  // `name` as given to `etcdctl lock`; `lease_id` is the holder's lease (e.g. a ManagedLease's id).
  Mutex(Client* client, std::string name, int64_t lease_id);

  // Joins the queue and waits for the lock, at most `timeout`. On timeout or cancellation it leaves
  // the queue and returns DeadlineExceeded or Cancelled: the caller still has its work and decides
  // whether to try again — nothing is dropped silently. FailedPrecondition when the lease ended
  // while waiting.
  [[nodiscard]] absl::StatusOr<LockToken> Lock(
      absl::Duration timeout, const CancellationToken& cancel = CancellationToken());
  // Releases the lock (or leaves the queue). OK when the key was already gone.
  [[nodiscard]] absl::Status Unlock();

  const std::string& key() const { return key_; }

  // The key a contender with lease `lease_id` queues under for lock `name`, and their prefix.
  static std::string KeyOf(const std::string& name, int64_t lease_id);
  static std::string PrefixOf(const std::string& name) { return name + "/"; }

  // A Txn compare that holds only while `token` still owns its lock.
  static etcdserverpb::Compare HeldBy(const LockToken& token);

 private:
  Client* const client_;
  const std::string prefix_;  // name + "/"
  const std::string key_;
  const int64_t lease_id_;
};

}  // namespace leasehold
