// Leader election on etcd's election protocol (as `etcdctl elect` and etcd's concurrency package
// run it, so they interoperate): campaigners put `<name>/<lease id in hex>` under their lease; the
// lowest create revision leads; its value is the leader's proclamation.
//
// Like a lock, leadership lasts while the leader's key exists — until Resign or the end of its
// lease — and a paused leader may have lost it without knowing. LeaderKey.rev (the key's create
// revision) fences: guard writes with a Txn comparing create_revision(key) == rev.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/leasehold/cancellation.h"
#include "etcdserverpb/rpc.pb.h"

namespace leasehold {

class Client;

struct LeaderKey {
  std::string name;  // the election
  std::string key;   // the leader's key
  int64_t rev = 0;   // its create revision: the fencing token
  int64_t lease = 0;
};

class Election {
 public:
  Election(Client* client, std::string name);

  // Waits until the campaigner with `lease_id` leads, then returns its key; its value is `value`.
  // On timeout or cancellation it withdraws (DeadlineExceeded / Cancelled); FailedPrecondition when
  // the lease ended while waiting.
  [[nodiscard]] absl::StatusOr<LeaderKey> Campaign(
      int64_t lease_id, const std::string& value, absl::Duration timeout,
      const CancellationToken& cancel = CancellationToken());
  // The header revision of the last Campaign's queueing transaction (etcd's Election.Header() after
  // Campaign): the revision at which the campaigner joined the queue, or found itself already in
  // it.
  int64_t campaign_revision() const { return campaign_revision_; }
  // Replaces the leader's value. FailedPrecondition "election: not leader" unless `leader` still
  // leads.
  [[nodiscard]] absl::StatusOr<etcdserverpb::ResponseHeader> Proclaim(const LeaderKey& leader,
                                                                      const std::string& value);
  // Gives up leadership (a no-op when `leader` no longer leads).
  [[nodiscard]] absl::StatusOr<etcdserverpb::ResponseHeader> Resign(const LeaderKey& leader);
  // The leader's key-value. NotFound "election: no leader" when nobody campaigns.
  [[nodiscard]] absl::StatusOr<etcdserverpb::RangeResponse> Leader();
  // Calls `on_leader` with the leader's key-value now (or as soon as there is one) and again each
  // time the leader or its value changes, until `cancel` is cancelled (returns OK) or a call fails.
  using LeaderHandler =
      std::function<void(const etcdserverpb::ResponseHeader&, const mvccpb::KeyValue&)>;
  [[nodiscard]] absl::Status Observe(const LeaderHandler& on_leader,
                                     const CancellationToken& cancel);

 private:
  // The key with the lowest create revision under the prefix (none: nobody campaigns).
  [[nodiscard]] absl::StatusOr<etcdserverpb::RangeResponse> FirstKey();

  Client* const client_;
  const std::string name_;
  const std::string prefix_;  // name + "/"
  int64_t campaign_revision_ = 0;
};

}  // namespace leasehold
