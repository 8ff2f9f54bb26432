// A service registry on leases: an instance registers `<root><service>/<instance>` under a lease it
// keeps alive; it disappears — one DELETE event for all of its keys — as soon as it deregisters, or
// within TTL + the server's expiry bound once its process stops renewing (crash, kill, pause,
// partition). Watchers see instances come and go in revision order, with no gap across reconnects.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/leasehold/cancellation.h"
#include "client/leasehold/managed_lease.h"
#include "client/leasehold/watch.h"

namespace leasehold {

class Client;

struct Instance {
  std::string service;
  std::string name;
  std::string value;  // e.g. the instance's address
};

// One registered instance. Deregisters (revokes its lease) when destroyed.
class Registration {
 public:
  Registration(std::unique_ptr<ManagedLease> lease, std::string key)
      : lease_(std::move(lease)), key_(std::move(key)) {}
  const std::string& key() const { return key_; }
  int64_t lease_id() const { return lease_->id(); }
  // Raised when the registration can no longer be vouched for (see ManagedLease::lost): the
  // instance should stop taking work meant for registered instances, and register again.
  CancellationToken lost() const { return lease_->lost(); }

 private:
  std::unique_ptr<ManagedLease> lease_;
  std::string key_;
};

class Registry {
 public:
  explicit Registry(Client* client, std::string root = "services/");

  // Registers `instance` of `service` with `value`, under a new lease of `ttl_seconds` kept alive
  // in the background. Service and instance names must be non-empty and free of '/'.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Registration>> Register(const std::string& service,
                                                                       const std::string& instance,
                                                                       const std::string& value,
                                                                       int64_t ttl_seconds);
  // The instances registered now; `*revision` (if given) is the store revision of this view.
  [[nodiscard]] absl::StatusOr<std::vector<Instance>> List(const std::string& service,
                                                           int64_t* revision = nullptr);

  // Lists the instances into `*initial`, then calls `on_change(instance, up)` for every change
  // after that view (up: registered or updated; !up: gone, value empty), on the watch's thread.
  using ChangeHandler = std::function<void(const Instance& instance, bool up)>;
  [[nodiscard]] absl::StatusOr<std::unique_ptr<leasehold::Watch>> WatchService(
      const std::string& service, std::vector<Instance>* initial, ChangeHandler on_change);

 private:
  std::string Prefix(const std::string& service) const { return root_ + service + "/"; }

  Client* const client_;
  const std::string root_;
};

}  // namespace leasehold
