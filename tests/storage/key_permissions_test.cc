// etcd's range permission check: which requests a set of key permissions covers.
#include "storage/auth/key_permissions.h"

#include <gtest/gtest.h>

namespace leasehold::storage {
namespace {

const std::string kAll(1, '\0');  // range_end "\0": every key from `key` on

authpb::Permission Perm(authpb::Permission::Type type, const std::string& key,
                        const std::string& end = "") {
  authpb::Permission p;
  p.set_permtype(type);
  p.set_key(key);
  p.set_range_end(end);
  return p;
}

bool Covers(const std::vector<authpb::Permission>& perms, Access access, const std::string& key,
            const std::string& end = "") {
  std::vector<const authpb::Permission*> granted;
  for (const auto& p : perms) granted.push_back(&p);
  return PermissionsCover(granted, access, key, end);
}

TEST(KeyPermissionsTest, SingleKeyPermissionCoversOnlyThatKey) {
  std::vector<authpb::Permission> perms = {Perm(authpb::Permission::READ, "/b")};
  EXPECT_TRUE(Covers(perms, Access::kRead, "/b"));
  EXPECT_FALSE(Covers(perms, Access::kRead, "/b0"));
  EXPECT_FALSE(Covers(perms, Access::kRead, "/a"));
  EXPECT_FALSE(Covers(perms, Access::kRead, "/b", "/c"));  // a range beyond the key
  EXPECT_FALSE(Covers(perms, Access::kWrite, "/b"));       // read does not grant write
}

TEST(KeyPermissionsTest, TypesGrantTheirAccess) {
  EXPECT_TRUE(Covers({Perm(authpb::Permission::WRITE, "/k")}, Access::kWrite, "/k"));
  EXPECT_FALSE(Covers({Perm(authpb::Permission::WRITE, "/k")}, Access::kRead, "/k"));
  EXPECT_TRUE(Covers({Perm(authpb::Permission::READWRITE, "/k")}, Access::kRead, "/k"));
  EXPECT_TRUE(Covers({Perm(authpb::Permission::READWRITE, "/k")}, Access::kWrite, "/k"));
}

TEST(KeyPermissionsTest, PrefixPermissionCoversKeysAndSubRanges) {
  std::vector<authpb::Permission> perms = {Perm(authpb::Permission::READWRITE, "/a/", "/a0")};
  EXPECT_TRUE(Covers(perms, Access::kWrite, "/a/x"));
  EXPECT_TRUE(Covers(perms, Access::kRead, "/a/", "/a0"));
  EXPECT_TRUE(Covers(perms, Access::kRead, "/a/b", "/a/c"));
  EXPECT_FALSE(Covers(perms, Access::kRead, "/a0"));        // the end is exclusive
  EXPECT_FALSE(Covers(perms, Access::kRead, "/a/", kAll));  // runs past the end
  EXPECT_FALSE(Covers(perms, Access::kRead, "/", "/a0"));   // starts before it
}

TEST(KeyPermissionsTest, AdjacentAndOverlappingPermissionsJoin) {
  std::vector<authpb::Permission> perms = {Perm(authpb::Permission::READ, "/c", "/f"),
                                           Perm(authpb::Permission::READ, "/a", "/c"),
                                           Perm(authpb::Permission::READ, "/e", "/h")};
  EXPECT_TRUE(Covers(perms, Access::kRead, "/a", "/h"));
  EXPECT_FALSE(Covers(perms, Access::kRead, "/a", "/i"));
  // A gap between two permissions is not covered.
  std::vector<authpb::Permission> gap = {Perm(authpb::Permission::READ, "/a", "/c"),
                                         Perm(authpb::Permission::READ, "/d", "/f")};
  EXPECT_FALSE(Covers(gap, Access::kRead, "/a", "/f"));
  EXPECT_TRUE(Covers(gap, Access::kRead, "/d", "/e"));
}

TEST(KeyPermissionsTest, SingleKeysJoinIntoARange) {
  // [a, a\0) and [a\0, b): a single key followed by the range starting right after it.
  std::vector<authpb::Permission> perms = {
      Perm(authpb::Permission::READ, "a"),
      Perm(authpb::Permission::READ, std::string("a\0", 2), "b")};
  EXPECT_TRUE(Covers(perms, Access::kRead, "a", "b"));
}

TEST(KeyPermissionsTest, FromKeyPermissionCoversEverythingAfter) {
  std::vector<authpb::Permission> perms = {Perm(authpb::Permission::READ, "/m", kAll)};
  EXPECT_TRUE(Covers(perms, Access::kRead, "/m"));
  EXPECT_TRUE(Covers(perms, Access::kRead, "/z", kAll));
  EXPECT_TRUE(Covers(perms, Access::kRead, "/m", "/n"));
  EXPECT_FALSE(Covers(perms, Access::kRead, "/a", kAll));
  std::vector<authpb::Permission> everything = {Perm(authpb::Permission::READ, "", kAll)};
  EXPECT_TRUE(Covers(everything, Access::kRead, kAll, kAll));  // etcdctl get "" --prefix
}

TEST(KeyPermissionsTest, NothingGrantedOrEmptyRequestIsNotCovered) {
  EXPECT_FALSE(Covers({}, Access::kRead, "/a"));
  std::vector<authpb::Permission> perms = {Perm(authpb::Permission::READ, "", kAll)};
  EXPECT_FALSE(Covers(perms, Access::kRead, "/b", "/a"));  // range_end before key: empty
  // A permission whose range is empty grants nothing.
  EXPECT_FALSE(Covers({Perm(authpb::Permission::READ, "/b", "/a")}, Access::kRead, "/b"));
}

}  // namespace
}  // namespace leasehold::storage
