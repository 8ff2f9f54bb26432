#include "storage/auth/auth_table.h"

#include <algorithm>

#include "common/etcd_errors.h"
#include "common/status_macros.h"

namespace leasehold::storage {
namespace {

constexpr std::string_view kUserPrefix = "auth/user/";
constexpr std::string_view kRolePrefix = "auth/role/";
constexpr std::string_view kEnabledName = "auth/enabled";
constexpr std::string_view kRevisionName = "auth/revision";
constexpr std::string_view kEnabledRevisionName = "auth/enabled_rev";

template <typename Record>
absl::Status ScanRecords(const Engine& engine, std::string_view prefix_name,
                         std::map<std::string, Record, std::less<>>* out) {
  const std::string prefix = keys::Meta(prefix_name);
  out->clear();
  auto it = engine.NewIterator();
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    Record record;
    if (!record.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return absl::DataLossError("malformed auth record");
    }
    out->emplace(it->key().ToString().substr(prefix.size()), std::move(record));
  }
  if (!it->status().ok())
    return absl::DataLossError("auth scan failed: " + it->status().ToString());
  return absl::OkStatus();
}

bool SamePermissionRange(const authpb::Permission& p, std::string_view key,
                         std::string_view range_end) {
  return p.key() == key && p.range_end() == range_end;
}

bool HasRole(const authpb::User& user, std::string_view role) {
  return std::binary_search(user.roles().begin(), user.roles().end(), role);
}

// Precondition: HasRole(user, role).
authpb::User WithoutRole(const authpb::User& user, std::string_view role) {
  authpb::User changed = user;
  auto* roles = changed.mutable_roles();
  roles->erase(std::find(roles->begin(), roles->end(), role));
  return changed;
}

}  // namespace

std::string AuthTable::UserKey(std::string_view name) {
  return keys::Meta(std::string(kUserPrefix) + std::string(name));
}
std::string AuthTable::RoleKey(std::string_view name) {
  return keys::Meta(std::string(kRolePrefix) + std::string(name));
}
std::string AuthTable::EnabledKey() { return keys::Meta(kEnabledName); }
std::string AuthTable::RevisionKey() { return keys::Meta(kRevisionName); }
std::string AuthTable::EnabledRevisionKey() { return keys::Meta(kEnabledRevisionName); }

absl::Status AuthTable::Restore(const Engine& engine) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(ScanRecords(engine, kUserPrefix, &users_));
  RETURN_IF_ERROR(ScanRecords(engine, kRolePrefix, &roles_));
  ASSIGN_OR_RETURN(uint64_t enabled, engine.GetMetaU64(kEnabledName));
  ASSIGN_OR_RETURN(revision_, engine.GetMetaU64(kRevisionName));
  ASSIGN_OR_RETURN(enabled_revision_, engine.GetMetaU64(kEnabledRevisionName));
  enabled_.store(enabled != 0, std::memory_order_release);
  return absl::OkStatus();
}

uint64_t AuthTable::revision() const {
  absl::MutexLock lock(&mu_);
  return revision_;
}

uint64_t AuthTable::enabled_revision() const {
  absl::MutexLock lock(&mu_);
  return enabled_revision_;
}

void AuthTable::PutUser(const authpb::User& user, rocksdb::WriteBatch* batch) {
  users_[user.name()] = user;
  batch->Put(UserKey(user.name()), user.SerializeAsString());
}

void AuthTable::PutRole(const authpb::Role& role, rocksdb::WriteBatch* batch) {
  roles_[role.name()] = role;
  batch->Put(RoleKey(role.name()), role.SerializeAsString());
}

absl::Status AuthTable::Apply(const internalpb::AuthRequest& request, rocksdb::WriteBatch* batch) {
  absl::MutexLock lock(&mu_);
  // Every check comes before the first change, so a refused request leaves `batch` as it was.
  const uint32_t count_before = batch->Count();
  RETURN_IF_ERROR(ApplyLocked(request, batch));
  if (batch->Count() == count_before)
    return absl::OkStatus();  // nothing changed: the revision stays
  ++revision_;
  Engine::PutMetaU64(batch, kRevisionName, revision_);
  return absl::OkStatus();
}

absl::Status AuthTable::ApplyLocked(const internalpb::AuthRequest& request,
                                    rocksdb::WriteBatch* batch) {
  const bool is_enabled = enabled();
  switch (request.op_case()) {
    case internalpb::AuthRequest::kEnable: {
      if (is_enabled) return absl::OkStatus();
      auto root = users_.find(kRootUser);
      if (root == users_.end()) return errors::RootUserNotExist();
      if (!HasRole(root->second, kRootRole)) return errors::RootRoleNotExist();
      enabled_.store(true, std::memory_order_release);
      enabled_revision_ = revision_ + 1;  // the revision this change is about to get
      Engine::PutMetaU64(batch, kEnabledName, 1);
      Engine::PutMetaU64(batch, kEnabledRevisionName, enabled_revision_);
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::kDisable:
      if (!is_enabled) return absl::OkStatus();
      enabled_.store(false, std::memory_order_release);
      Engine::PutMetaU64(batch, kEnabledName, 0);
      return absl::OkStatus();
    case internalpb::AuthRequest::kAuthenticate: {
      const auto& r = request.authenticate();
      if (!is_enabled) return errors::AuthNotEnabled();
      auto user = users_.find(r.name());
      if (user == users_.end() || user->second.options().no_password() ||
          user->second.password() != r.password_hash()) {
        return errors::AuthFailed();
      }
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::kUserAdd: {
      const auto& r = request.user_add();
      if (r.name().empty()) return errors::UserEmpty();
      if (users_.contains(r.name())) return errors::UserAlreadyExist();
      authpb::User user;
      user.set_name(r.name());
      if (!r.options().no_password()) user.set_password(r.hashedpassword());
      *user.mutable_options() = r.options();
      PutUser(user, batch);
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::kUserDelete: {
      const auto& r = request.user_delete();
      if (is_enabled && r.name() == kRootUser) return errors::InvalidAuthMgmt();
      auto user = users_.find(r.name());
      if (user == users_.end()) return errors::UserNotFound();
      users_.erase(user);
      batch->Delete(UserKey(r.name()));
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::kUserChangePassword: {
      const auto& r = request.user_change_password();
      auto user = users_.find(r.name());
      if (user == users_.end()) return errors::UserNotFound();
      authpb::User changed = user->second;
      changed.set_password(r.hashedpassword());
      changed.mutable_options()->set_no_password(false);
      PutUser(changed, batch);
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::kUserGrantRole: {
      const auto& r = request.user_grant_role();
      auto user = users_.find(r.user());
      if (user == users_.end()) return errors::UserNotFound();
      if (r.role() != kRootRole && !roles_.contains(r.role())) return errors::RoleNotFound();
      if (HasRole(user->second, r.role())) return absl::OkStatus();
      authpb::User changed = user->second;
      changed.add_roles(r.role());
      std::sort(changed.mutable_roles()->begin(), changed.mutable_roles()->end());
      PutUser(changed, batch);
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::kUserRevokeRole: {
      const auto& r = request.user_revoke_role();
      if (is_enabled && r.name() == kRootUser && r.role() == kRootRole)
        return errors::InvalidAuthMgmt();
      auto user = users_.find(r.name());
      if (user == users_.end()) return errors::UserNotFound();
      if (!HasRole(user->second, r.role())) return errors::RoleNotGranted();
      PutUser(WithoutRole(user->second, r.role()), batch);
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::kRoleAdd: {
      const auto& r = request.role_add();
      if (r.name().empty()) return errors::RoleEmpty();
      if (roles_.contains(r.name())) return errors::RoleAlreadyExist();
      authpb::Role role;
      role.set_name(r.name());
      PutRole(role, batch);
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::kRoleDelete: {
      const auto& r = request.role_delete();
      if (is_enabled && r.role() == kRootRole) return errors::InvalidAuthMgmt();
      if (!roles_.contains(r.role())) return errors::RoleNotFound();
      roles_.erase(r.role());
      batch->Delete(RoleKey(r.role()));
      // etcd takes the role from every user holding it.
      for (auto& [name, user] : users_) {
        if (HasRole(user, r.role())) PutUser(WithoutRole(user, r.role()), batch);
      }
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::kRoleGrantPermission: {
      const auto& r = request.role_grant_permission();
      auto role = roles_.find(r.name());
      if (role == roles_.end()) return errors::RoleNotFound();
      if (!r.has_perm()) return errors::PermissionNotGiven();
      authpb::Role changed = role->second;
      auto* perms = changed.mutable_keypermission();
      auto same = std::find_if(perms->begin(), perms->end(), [&](const authpb::Permission& p) {
        return SamePermissionRange(p, r.perm().key(), r.perm().range_end());
      });
      if (same != perms->end()) {
        same->set_permtype(r.perm().permtype());  // the same range granted again: its type changes
      } else {
        *perms->Add() = r.perm();
        std::sort(perms->begin(), perms->end(),
                  [](const authpb::Permission& a, const authpb::Permission& b) {
                    return std::tie(a.key(), a.range_end()) < std::tie(b.key(), b.range_end());
                  });
      }
      PutRole(changed, batch);
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::kRoleRevokePermission: {
      const auto& r = request.role_revoke_permission();
      auto role = roles_.find(r.role());
      if (role == roles_.end()) return errors::RoleNotFound();
      authpb::Role changed = role->second;
      auto* perms = changed.mutable_keypermission();
      auto same = std::find_if(perms->begin(), perms->end(), [&](const authpb::Permission& p) {
        return SamePermissionRange(p, r.key(), r.range_end());
      });
      if (same == perms->end()) return errors::PermissionNotGranted();
      perms->erase(same);
      PutRole(changed, batch);
      return absl::OkStatus();
    }
    case internalpb::AuthRequest::OP_NOT_SET:
      return absl::InvalidArgumentError("empty auth request");
  }
  return absl::InvalidArgumentError("unknown auth request");
}

bool AuthTable::IsRootLocked(std::string_view user) const {
  auto it = users_.find(user);
  return it != users_.end() && HasRole(it->second, kRootRole);
}

absl::Status AuthTable::CheckUser(std::string_view user) const {
  if (!enabled()) return absl::OkStatus();
  if (user.empty()) return errors::UserEmpty();
  absl::MutexLock lock(&mu_);
  return users_.contains(user) ? absl::OkStatus() : errors::PermissionDenied();
}

absl::Status AuthTable::CheckAdmin(std::string_view user) const {
  if (!enabled()) return absl::OkStatus();
  if (user.empty()) return errors::UserEmpty();
  absl::MutexLock lock(&mu_);
  return IsRootLocked(user) ? absl::OkStatus() : errors::PermissionDenied();
}

absl::Status AuthTable::CheckRange(std::string_view user, std::string_view key,
                                   std::string_view range_end, Access access) const {
  if (!enabled()) return absl::OkStatus();
  if (user.empty()) return errors::UserEmpty();
  absl::MutexLock lock(&mu_);
  auto it = users_.find(user);
  if (it == users_.end()) return errors::PermissionDenied();
  if (HasRole(it->second, kRootRole)) return absl::OkStatus();
  std::vector<const authpb::Permission*> granted;
  for (const std::string& role_name : it->second.roles()) {
    auto role = roles_.find(role_name);
    if (role == roles_.end()) continue;
    for (const auto& permission : role->second.keypermission()) granted.push_back(&permission);
  }
  return PermissionsCover(granted, access, key, range_end) ? absl::OkStatus()
                                                           : errors::PermissionDenied();
}

bool AuthTable::HasPasswordHash(std::string_view user, std::string_view password_hash) const {
  absl::MutexLock lock(&mu_);
  auto it = users_.find(user);
  return it != users_.end() && it->second.password() == password_hash;
}

std::optional<authpb::User> AuthTable::GetUser(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = users_.find(name);
  if (it == users_.end()) return std::nullopt;
  return it->second;
}

std::optional<authpb::Role> AuthTable::GetRole(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = roles_.find(name);
  if (it == roles_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> AuthTable::UserNames() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, user] : users_) names.push_back(name);
  return names;
}

std::vector<std::string> AuthTable::RoleNames() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, role] : roles_) names.push_back(name);
  return names;
}

}  // namespace leasehold::storage
