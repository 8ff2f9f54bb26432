// AuthTable: etcd's v3 auth store as replicated state — users (with password hashes), roles and
// their key permissions, whether auth is enabled, and the auth revision that every change bumps.
// Changed only by the state machine applying Auth entries; read by request handlers (token checks,
// read permissions, user and role queries) and by the state machine (write permissions at apply).
// Persisted under Meta("auth/"); travels in Raft snapshots and backups with the rest of the state.
//
// Thread-safe. The checks take a user name already authenticated by the caller.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "authpb/auth.pb.h"
#include "leasehold/internal.pb.h"
#include "rocksdb/write_batch.h"
#include "storage/auth/key_permissions.h"
#include "storage/backend/engine.h"

namespace leasehold::storage {

inline constexpr std::string_view kRootUser = "root";
inline constexpr std::string_view kRootRole = "root";

class AuthTable {
 public:
  // Replaces the table with the persisted one. DataLoss on a malformed record.
  [[nodiscard]] absl::Status Restore(const Engine& engine);

  // Where the table keeps its records, for importers of another store's auth state: a user's and a
  // role's (authpb.User and authpb.Role), and the enabled flag, the revision and the revision at
  // which auth was enabled (each a big-endian u64 meta record).
  static std::string UserKey(std::string_view name);
  static std::string RoleKey(std::string_view name);
  static std::string EnabledKey();
  static std::string RevisionKey();
  static std::string EnabledRevisionKey();

  bool enabled() const { return enabled_.load(std::memory_order_acquire); }
  // Bumped by every change (etcd's auth revision, reported by AuthStatus).
  uint64_t revision() const;
  // The revision at which auth was last enabled: a token issued before it (so before an auth
  // disable) is void, as etcd drops every token when auth is disabled.
  uint64_t enabled_revision() const;

  // Applies one auth change with etcd's checks and errors; on success adds its records to `batch`.
  // Authenticate changes nothing: it only checks that auth is on and that `password_hash` is still
  // the user's. Permission to make the change is the caller's to check (CheckAdmin).
  [[nodiscard]] absl::Status Apply(const internalpb::AuthRequest& request,
                                   rocksdb::WriteBatch* batch);

  // While auth is enabled: OK for any existing user; "user name is empty" for "", "permission
  // denied" for an unknown one. Always OK while auth is disabled.
  [[nodiscard]] absl::Status CheckUser(std::string_view user) const;
  // While auth is enabled: OK for a user holding the root role; "user name is empty" for "",
  // "permission denied" otherwise. Always OK while auth is disabled.
  [[nodiscard]] absl::Status CheckAdmin(std::string_view user) const;
  // While auth is enabled: whether `user` may read or write every key of [key, range_end) (see
  // key_permissions.h), with CheckAdmin's errors. Always OK while auth is disabled.
  [[nodiscard]] absl::Status CheckRange(std::string_view user, std::string_view key,
                                        std::string_view range_end, Access access) const;

  // Whether `user` exists and its stored password hash is `password_hash` (a token's check, made
  // on every call while auth is enabled: it copies nothing).
  bool HasPasswordHash(std::string_view user, std::string_view password_hash) const;
  std::optional<authpb::User> GetUser(std::string_view name) const;
  std::optional<authpb::Role> GetRole(std::string_view name) const;
  // Sorted.
  std::vector<std::string> UserNames() const;
  std::vector<std::string> RoleNames() const;

 private:
  [[nodiscard]] absl::Status ApplyLocked(const internalpb::AuthRequest& request,
                                         rocksdb::WriteBatch* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PutUser(const authpb::User& user, rocksdb::WriteBatch* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PutRole(const authpb::Role& role, rocksdb::WriteBatch* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `user` exists and holds the root role.
  bool IsRootLocked(std::string_view user) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::atomic<bool> enabled_{false};  // written under mu_; read without it on every request
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t enabled_revision_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, authpb::User, std::less<>> users_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, authpb::Role, std::less<>> roles_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasehold::storage
