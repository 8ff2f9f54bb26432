// etcd's v3 auth as replicated state: AuthTable's rules, applied through the state machine, and the
// permission checks applying an entry with a caller makes while auth is enabled.
#include <gtest/gtest.h>

#include "common/etcd_errors.h"
#include "storage/apply/state_machine.h"
#include "storage/reopen.h"
#include "storage/temp_dir.h"

namespace leasehold::storage {
namespace {

const std::string kAll(1, '\0');

class AuthStateTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    ASSERT_NO_FATAL_FAILURE(testing::ReopenStateMachine(dir_.Sub("db"), &engine_, &sm_));
    next_index_ = sm_->applied_index() + 1;
  }

  // Applies `entry` as made for a call by `user` (nullptr: the server's own entry).
  absl::Status Apply(internalpb::InternalRequest entry, const char* user = nullptr) {
    entry.set_time_unix_ms(1'000'000);
    if (user != nullptr) entry.mutable_caller()->set_user(user);
    ApplyResult result = sm_->Apply(next_index_++, entry);
    sm_->FlushApplied();
    return result.status;
  }
  absl::Status Auth(internalpb::AuthRequest request, const char* user = nullptr) {
    internalpb::InternalRequest entry;
    *entry.mutable_auth() = std::move(request);
    return Apply(std::move(entry), user);
  }
  absl::Status AddUser(const std::string& name, const std::string& hash = "hash") {
    internalpb::AuthRequest r;
    r.mutable_user_add()->set_name(name);
    r.mutable_user_add()->set_hashedpassword(hash);
    return Auth(r);
  }
  absl::Status AddRole(const std::string& name) {
    internalpb::AuthRequest r;
    r.mutable_role_add()->set_name(name);
    return Auth(r);
  }
  absl::Status GrantRole(const std::string& user, const std::string& role,
                         const char* caller = nullptr) {
    internalpb::AuthRequest r;
    r.mutable_user_grant_role()->set_user(user);
    r.mutable_user_grant_role()->set_role(role);
    return Auth(r, caller);
  }
  absl::Status GrantPermission(const std::string& role, authpb::Permission::Type type,
                               const std::string& key, const std::string& end) {
    internalpb::AuthRequest r;
    r.mutable_role_grant_permission()->set_name(role);
    r.mutable_role_grant_permission()->mutable_perm()->set_permtype(type);
    r.mutable_role_grant_permission()->mutable_perm()->set_key(key);
    r.mutable_role_grant_permission()->mutable_perm()->set_range_end(end);
    return Auth(r);
  }
  absl::Status Enable(const char* caller = nullptr) {
    internalpb::AuthRequest r;
    r.mutable_enable();
    return Auth(r, caller);
  }
  absl::Status Put(const std::string& key, const char* user, int64_t lease = 0) {
    internalpb::InternalRequest e;
    e.mutable_put()->set_key(key);
    e.mutable_put()->set_value("v");
    e.mutable_put()->set_lease(lease);
    return Apply(e, user);
  }
  // root (with the root role) and alice (readwrite on /a/ prefix, read on /b), auth enabled.
  void SetUpUsers() {
    ASSERT_TRUE(AddUser("root").ok());
    ASSERT_TRUE(GrantRole("root", "root").ok());
    ASSERT_TRUE(AddUser("alice").ok());
    ASSERT_TRUE(AddRole("r1").ok());
    ASSERT_TRUE(GrantPermission("r1", authpb::Permission::READWRITE, "/a/", "/a0").ok());
    ASSERT_TRUE(GrantPermission("r1", authpb::Permission::READ, "/b", "").ok());
    ASSERT_TRUE(GrantRole("alice", "r1").ok());
    ASSERT_TRUE(Enable().ok());
  }

  testing::TempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<StateMachine> sm_;
  uint64_t next_index_ = 1;
};

TEST_F(AuthStateTest, EnableNeedsRootUserWithRootRole) {
  EXPECT_EQ(Enable(), errors::RootUserNotExist());
  ASSERT_TRUE(AddUser("root").ok());
  EXPECT_EQ(Enable(), errors::RootRoleNotExist());
  ASSERT_TRUE(GrantRole("root", "root").ok());  // the root role need not have been added
  EXPECT_TRUE(Enable().ok());
  EXPECT_TRUE(sm_->auth().enabled());
}

TEST_F(AuthStateTest, UserAndRoleErrorsAreEtcds) {
  EXPECT_EQ(AddUser(""), errors::UserEmpty());
  ASSERT_TRUE(AddUser("u").ok());
  EXPECT_EQ(AddUser("u"), errors::UserAlreadyExist());
  EXPECT_EQ(AddRole(""), errors::RoleEmpty());
  ASSERT_TRUE(AddRole("r").ok());
  EXPECT_EQ(AddRole("r"), errors::RoleAlreadyExist());
  EXPECT_EQ(GrantRole("nobody", "r"), errors::UserNotFound());
  EXPECT_EQ(GrantRole("u", "nosuch"), errors::RoleNotFound());
  internalpb::AuthRequest revoke;
  revoke.mutable_user_revoke_role()->set_name("u");
  revoke.mutable_user_revoke_role()->set_role("r");
  EXPECT_EQ(Auth(revoke), errors::RoleNotGranted());
  internalpb::AuthRequest no_perm;
  no_perm.mutable_role_grant_permission()->set_name("r");
  EXPECT_EQ(Auth(no_perm), errors::PermissionNotGiven());
  internalpb::AuthRequest revoke_perm;
  revoke_perm.mutable_role_revoke_permission()->set_role("r");
  revoke_perm.mutable_role_revoke_permission()->set_key("/x");
  EXPECT_EQ(Auth(revoke_perm), errors::PermissionNotGranted());
}

TEST_F(AuthStateTest, RootCannotBeRemovedWhileEnabled) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  internalpb::AuthRequest del;
  del.mutable_user_delete()->set_name("root");
  EXPECT_EQ(Auth(del, "root"), errors::InvalidAuthMgmt());
  internalpb::AuthRequest revoke;
  revoke.mutable_user_revoke_role()->set_name("root");
  revoke.mutable_user_revoke_role()->set_role("root");
  EXPECT_EQ(Auth(revoke, "root"), errors::InvalidAuthMgmt());
}

TEST_F(AuthStateTest, ChangesNeedTheRootRoleOnceEnabled) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  EXPECT_EQ(GrantRole("alice", "root", "alice"), errors::PermissionDenied());
  EXPECT_EQ(GrantRole("alice", "root", ""), errors::UserEmpty());
  internalpb::AuthRequest disable;
  disable.mutable_disable();
  EXPECT_EQ(Auth(disable, "alice"), errors::PermissionDenied());
  EXPECT_TRUE(sm_->auth().enabled());
  EXPECT_TRUE(Auth(disable, "root").ok());
  EXPECT_FALSE(sm_->auth().enabled());
}

TEST_F(AuthStateTest, WritesAreCheckedWhenApplied) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  EXPECT_TRUE(Put("/a/x", "alice").ok());
  EXPECT_EQ(Put("/b", "alice"), errors::PermissionDenied());  // read only
  EXPECT_EQ(Put("/c", "alice"), errors::PermissionDenied());
  EXPECT_EQ(Put("/a/x", ""), errors::UserEmpty());
  EXPECT_EQ(Put("/a/x", "mallory"), errors::PermissionDenied());
  EXPECT_TRUE(Put("/c", "root").ok());
  EXPECT_TRUE(Put("/c", nullptr).ok());  // the server's own entries are not a caller's
  // A transaction needs read on its compares and access for both branches' operations.
  internalpb::InternalRequest txn;
  auto* compare = txn.mutable_txn()->add_compare();
  compare->set_key("/a/x");
  compare->set_target(etcdserverpb::Compare::VERSION);
  txn.mutable_txn()->add_success()->mutable_request_put()->set_key("/a/y");
  EXPECT_TRUE(Apply(txn, "alice").ok());
  txn.mutable_txn()->add_failure()->mutable_request_delete_range()->set_key("/c");
  EXPECT_EQ(Apply(txn, "alice"), errors::PermissionDenied());
}

TEST_F(AuthStateTest, RevokingALeaseNeedsWriteOnItsKeys) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  internalpb::InternalRequest grant;
  grant.mutable_lease_grant()->set_id(7);
  grant.mutable_lease_grant()->set_ttl(60);
  ASSERT_TRUE(Apply(grant, "alice").ok());
  ASSERT_TRUE(Put("/a/l", "alice", 7).ok());
  ASSERT_TRUE(Put("/z", "root", 7).ok());
  EXPECT_EQ(Put("/a/m", "alice", 7),
            errors::PermissionDenied());  // attaching needs write on /z too
  internalpb::InternalRequest revoke;
  revoke.mutable_lease_revoke()->set_id(7);
  EXPECT_EQ(Apply(revoke, "alice"), errors::PermissionDenied());
  EXPECT_TRUE(sm_->leases().Contains(7));
  EXPECT_TRUE(Apply(revoke, "root").ok());
  EXPECT_FALSE(sm_->leases().Contains(7));
}

TEST_F(AuthStateTest, AuthenticateHoldsOnlyForTheCurrentHash) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  internalpb::AuthRequest login;
  login.mutable_authenticate()->set_name("alice");
  login.mutable_authenticate()->set_password_hash("hash");
  EXPECT_TRUE(Auth(login).ok());
  internalpb::AuthRequest change;
  change.mutable_user_change_password()->set_name("alice");
  change.mutable_user_change_password()->set_hashedpassword("new");
  ASSERT_TRUE(Auth(change, "root").ok());
  EXPECT_EQ(Auth(login), errors::AuthFailed());  // checked against the old password
}

TEST_F(AuthStateTest, DeletingARoleTakesItFromUsersAndEveryChangeBumpsTheRevision) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  const uint64_t before = sm_->auth().revision();
  internalpb::AuthRequest del;
  del.mutable_role_delete()->set_role("r1");
  ASSERT_TRUE(Auth(del, "root").ok());
  EXPECT_EQ(sm_->auth().revision(), before + 1);
  EXPECT_EQ(sm_->auth().GetUser("alice")->roles_size(), 0);
  EXPECT_EQ(Put("/a/x", "alice"), errors::PermissionDenied());
  EXPECT_EQ(GrantRole("root", "root", "root"), absl::OkStatus());  // already held: no change
  EXPECT_EQ(sm_->auth().revision(), before + 1);
}

TEST_F(AuthStateTest, SurvivesARestartAndTravelsInSnapshots) {
  ASSERT_NO_FATAL_FAILURE(SetUpUsers());
  const uint64_t revision = sm_->auth().revision();
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_TRUE(sm_->auth().enabled());
  EXPECT_EQ(sm_->auth().revision(), revision);
  EXPECT_EQ(Put("/c", "alice"), errors::PermissionDenied());

  testing::TempDir other;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<StateMachine> copy;
  ASSERT_NO_FATAL_FAILURE(testing::CopyBySnapshot(*sm_, other.Sub("db"), &engine, &copy));
  EXPECT_TRUE(copy->auth().enabled());
  EXPECT_EQ(copy->auth().UserNames(), (std::vector<std::string>{"alice", "root"}));
  EXPECT_TRUE(copy->auth().CheckRange("alice", "/a/", "/a0", Access::kRead).ok());
  EXPECT_EQ(copy->auth().CheckRange("alice", "/b", "", Access::kWrite), errors::PermissionDenied());
}

}  // namespace
}  // namespace leasehold::storage
