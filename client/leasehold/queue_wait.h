// The queue of etcd's lock and election protocols, shared by Mutex and Election: contenders put
// `<prefix><lease hex>` under their lease; the lowest create revision is first; each other
// contender waits for the deletion of the key just ahead of it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/leasehold/cancellation.h"
#include "etcdserverpb/rpc.pb.h"

namespace leasehold {

class Client;

struct QueuePlace {
  int64_t create_revision = 0;  // of our key: our place, and the fencing token
  int64_t revision = 0;         // the store revision at which `first` was observed
  bool existed = false;         // our key was already there (same lease enqueued before)
  std::string existing_value;   // its value then
  bool first = false;           // nobody is ahead of us
};

// The Txn compare "create_revision(key) == revision": true only while that very key still exists
// (a recreated key has a new create revision). It fences writes by a lock holder or leader.
etcdserverpb::Compare CreateRevisionIs(const std::string& key, int64_t revision);

// Puts `key` = `value` under `lease` unless the key exists, and reads whether it is first under
// `prefix` — in one transaction.
[[nodiscard]] absl::StatusOr<QueuePlace> Enqueue(Client* client, const std::string& prefix,
                                                 const std::string& key, const std::string& value,
                                                 int64_t lease);
// The two halves of Enqueue, for a caller that runs the transaction its own way (the server's Lock
// RPC proposes it directly): the transaction, and the place its response gives `key`.
etcdserverpb::TxnRequest EnqueueTxn(const std::string& prefix, const std::string& key,
                                    const std::string& value, int64_t lease);
[[nodiscard]] absl::StatusOr<QueuePlace> PlaceOf(const etcdserverpb::TxnResponse& response,
                                                 const std::string& key);

// Who is just ahead of `key` (created at `create_revision`) under `prefix`, read in one read-only
// transaction (AheadTxn) and its answer (AheadOf).
struct Ahead {
  bool queued = false;   // `key` still exists with that create revision (its lease has not ended)
  std::string key;       // the newest key created before it; empty when it is first
  int64_t revision = 0;  // the store revision of the read
};
etcdserverpb::TxnRequest AheadTxn(const std::string& prefix, const std::string& key,
                                  int64_t create_revision);
Ahead AheadOf(const etcdserverpb::TxnResponse& response, int64_t create_revision);

// Waits until nobody is ahead of `key` (created at `create_revision`) under `prefix`: repeatedly
// finds the newest key created before it and waits, by watch, for its deletion. Returns the
// revision at which `key` was seen first; FailedPrecondition when `key` itself disappeared (its
// lease ended).
[[nodiscard]] absl::StatusOr<int64_t> WaitUntilFirst(Client* client, const std::string& prefix,
                                                     const std::string& key,
                                                     int64_t create_revision, absl::Time deadline,
                                                     const CancellationToken& cancel);

}  // namespace leasehold
