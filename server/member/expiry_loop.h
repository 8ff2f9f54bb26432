// The primary's lease timekeeper. Every tick it pops leases whose time is up and proposes their
// revocation through the same path a client's LeaseRevoke takes, at most `revoke_rate_per_second`
// (etcd's default: 1000/s) so an expiry storm cannot crowd out other requests; a lease whose revoke
// does not take effect comes back after `retry_ms`. Every `checkpoint_interval_ms` it proposes one
// checkpoint entry with the remaining time of each lease renewed since the last one, so a restart
// keeps renewed deadlines.
#pragma once

#include <cstdint>
#include <thread>

#include "absl/synchronization/notification.h"
#include "server/member/member.h"

namespace leasehold::server {

class ExpiryLoop {
 public:
  struct Options {
    int revoke_rate_per_second = 1000;
    int64_t retry_ms = 7000;
    int64_t checkpoint_interval_ms = 500;
    int64_t tick_ms = 50;
  };
  ExpiryLoop(Member* member, Options options) : member_(member), options_(options) {}
  ~ExpiryLoop() { Stop(); }

  void Start();
  void Stop();

 private:
  void Run();
  void RevokeExpired(int64_t now_ms, double* budget);
  void Checkpoint(int64_t now_ms);

  Member* const member_;
  const Options options_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace leasehold::server
