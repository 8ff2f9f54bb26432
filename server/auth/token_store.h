// TokenStore: etcd's simple tokens on this member. A token is made when an Authenticate entry is
// applied (so every member learns it, whichever one the client asked) and lives for
// --auth-token-ttl after its last use here, as etcd's simple tokens do. It names a user and the
// password hash and auth-enable revision it was issued under; the caller checks those against the
// replicated auth table, so a password change, a deleted user or an auth disable voids it on every
// member. Not replicated state: each member times its tokens with its own clock.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leasehold::server {

class TokenStore {
 public:
  struct Issued {
    std::string user;
    std::string password_hash;
    uint64_t enabled_revision = 0;
  };

  explicit TokenStore(absl::Duration ttl) : ttl_(ttl) {}

  void Add(const std::string& token, Issued issued, absl::Time now);
  // The token's grant, extending its life by the TTL; nullopt when unknown here or expired.
  std::optional<Issued> Use(const std::string& token, absl::Time now);
  size_t size() const;

 private:
  struct Entry {
    Issued issued;
    absl::Time expires;
  };
  void SweepLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration ttl_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time next_sweep_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace leasehold::server
