// Member's gatekeeping before the log: etcd's apply-lag backpressure, and which auth tokens name a
// user (against the replicated auth table and the member's token store); its member list.
#include "server/member/member.h"

#include <gtest/gtest.h>

#include "common/etcd_errors.h"
#include "server/test_proposer.h"

namespace leasehold::server {
namespace {

class MemberTest : public MemberFixture {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(OpenMember({"http://10.0.0.1:2379"})); }

  absl::Status Submit() {
    internalpb::InternalRequest entry;
    entry.mutable_put()->set_key("k");
    absl::Status status = absl::OkStatus();
    member_->Submit(entry, [&](storage::ApplyResult result) { status = result.status; });
    return status;
  }
  void ApplyAuth(internalpb::AuthRequest request) {
    internalpb::InternalRequest entry;
    *entry.mutable_auth() = std::move(request);
    ASSERT_TRUE(sm_->Apply(++index_, entry).status.ok());
    sm_->FlushApplied();
  }
  void AddRootAndEnable() {
    internalpb::AuthRequest add;
    add.mutable_user_add()->set_name("root");
    add.mutable_user_add()->set_hashedpassword("h1");
    ASSERT_NO_FATAL_FAILURE(ApplyAuth(add));
    internalpb::AuthRequest grant;
    grant.mutable_user_grant_role()->set_user("root");
    grant.mutable_user_grant_role()->set_role("root");
    ASSERT_NO_FATAL_FAILURE(ApplyAuth(grant));
    internalpb::AuthRequest enable;
    enable.mutable_enable();
    ASSERT_NO_FATAL_FAILURE(ApplyAuth(enable));
  }

  uint64_t index_ = 0;
};

TEST_F(MemberTest, RefusesNewRequestsWhileApplyingLagsFarBehind) {
  proposer_.committed = 10'000;
  proposer_.applied = 10'000 - Member::kMaxApplyLag;
  EXPECT_TRUE(Submit().ok());
  ASSERT_EQ(proposer_.Proposed().size(), 1u);
  EXPECT_NE(proposer_.Proposed()[0].id(), 0u);
  EXPECT_GT(proposer_.Proposed()[0].time_unix_ms(), 0);
  proposer_.applied -= 1;
  EXPECT_EQ(Submit(), errors::TooManyRequests());
  EXPECT_EQ(proposer_.Proposed().size(), 1u);
}

TEST_F(MemberTest, TokensNameTheirUserOnlyWhileStillValid) {
  // Auth disabled: no token is valid (etcd refuses a stale one rather than ignore it); none is
  // fine.
  EXPECT_EQ(member_->AuthenticatedUser("anything").status(), errors::InvalidAuthToken());
  EXPECT_EQ(*member_->AuthenticatedUser(""), "");
  ASSERT_NO_FATAL_FAILURE(AddRootAndEnable());
  EXPECT_EQ(*member_->AuthenticatedUser(""), "");  // no token: the empty user, refused later
  EXPECT_EQ(member_->AuthenticatedUser("unknown").status(), errors::InvalidAuthToken());
  tokens_.Add("tok", {"root", "h1", sm_->auth().enabled_revision()}, absl::Now());
  EXPECT_EQ(*member_->AuthenticatedUser("tok"), "root");

  internalpb::AuthRequest change;
  change.mutable_user_change_password()->set_name("root");
  change.mutable_user_change_password()->set_hashedpassword("h2");
  ASSERT_NO_FATAL_FAILURE(ApplyAuth(change));
  EXPECT_EQ(member_->AuthenticatedUser("tok").status(), errors::InvalidAuthToken());

  tokens_.Add("tok2", {"root", "h2", sm_->auth().enabled_revision()}, absl::Now());
  EXPECT_EQ(*member_->AuthenticatedUser("tok2"), "root");
  internalpb::AuthRequest disable;
  disable.mutable_disable();
  ASSERT_NO_FATAL_FAILURE(ApplyAuth(disable));
  EXPECT_EQ(member_->AuthenticatedUser("tok2").status(), errors::InvalidAuthToken());
  internalpb::AuthRequest enable;
  enable.mutable_enable();
  ASSERT_NO_FATAL_FAILURE(ApplyAuth(enable));
  // Issued before auth was last enabled: void, as etcd drops every token on disable.
  EXPECT_EQ(member_->AuthenticatedUser("tok2").status(), errors::InvalidAuthToken());
}

// Before its own publish applies (etcd would not answer yet), this member lists itself with its
// name and client URLs; another member that has not published shows neither, as in etcd.
TEST_F(MemberTest, ListsItselfAsItPublishesItselfAndOthersAsApplied) {
  for (uint64_t id : {1, 2}) {
    raftpb::ConfChange change;
    change.set_type(raftpb::CONF_ADD_VOTER);
    change.set_node_id(id);
    internalpb::MemberRecord record;
    record.set_id(id);
    record.add_peer_urls("http://10.0.0." + std::to_string(id) + ":2380");
    change.set_context(record.SerializeAsString());
    sm_->ApplyConfChange(++index_, change, raftpb::ConfState());
    sm_->FlushApplied();
  }
  google::protobuf::RepeatedPtrField<etcdserverpb::Member> members;
  member_->ListMembers(&members);
  ASSERT_EQ(members.size(), 2);
  EXPECT_EQ(members[0].id(), 1u);
  EXPECT_EQ(members[0].name(), "m1");
  ASSERT_EQ(members[0].clienturls_size(), 1);
  EXPECT_EQ(members[0].clienturls(0), "http://10.0.0.1:2379");
  EXPECT_EQ(members[0].peerurls(0), "http://10.0.0.1:2380");
  EXPECT_EQ(members[1].id(), 2u);
  EXPECT_EQ(members[1].name(), "");
  EXPECT_EQ(members[1].clienturls_size(), 0);
  EXPECT_EQ(members[1].peerurls(0), "http://10.0.0.2:2380");
}

}  // namespace
}  // namespace leasehold::server
