// Cluster configuration from etcd's bootstrap flags: ids every founding member agrees on, and
// clear refusals of inconsistent flags.
#include "server/command/cluster_config.h"

#include <gtest/gtest.h>

namespace leasehold::server {
namespace {

Flags MemberFlags(const std::string& name, const std::string& peer_url,
                  const std::string& initial_cluster =
                      "a=http://127.0.0.1:2380,b=http://127.0.0.1:22380,c=http://127.0.0.1:32380",
                  const std::string& token = "tok") {
  Flags flags;
  flags.name = name;
  flags.initial_advertise_peer_urls = {peer_url};
  flags.initial_cluster = initial_cluster;
  flags.initial_cluster_token = token;
  return flags;
}

TEST(ClusterConfigTest, FoundersAgreeOnIds) {
  auto a = BuildClusterConfig(MemberFlags("a", "http://127.0.0.1:2380"));
  auto c = BuildClusterConfig(MemberFlags("c", "http://127.0.0.1:32380"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(a->cluster_id, c->cluster_id);
  ASSERT_EQ(a->members.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(a->members[i].id(), c->members[i].id());
  EXPECT_NE(a->self_id, c->self_id);
  EXPECT_EQ(a->self_id, MemberIdOf({"http://127.0.0.1:2380"}, "tok"));
  // Sorted by id, names kept.
  EXPECT_LT(a->members[0].id(), a->members[1].id());
  // Another token makes another cluster.
  Flags other = MemberFlags("a", "http://127.0.0.1:2380");
  other.initial_cluster_token = "other";
  EXPECT_NE(BuildClusterConfig(other)->cluster_id, a->cluster_id);
}

// The ids etcd 3.4.23 gave (`etcdctl member list -w json`) when started with the same flags.
TEST(ClusterConfigTest, IdsAreEtcds) {
  auto one = BuildClusterConfig(
      MemberFlags("solo", "http://127.0.0.1:27502", "solo=http://127.0.0.1:27502", "tok-a"));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->self_id, 10718488916488341482ULL);
  EXPECT_EQ(one->cluster_id, 4404688784090371776ULL);

  auto three = BuildClusterConfig(MemberFlags(
      "a", "http://127.0.0.1:27512",
      "a=http://127.0.0.1:27512,b=http://127.0.0.1:27522,c=http://127.0.0.1:27532", "tok-b"));
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(three->self_id, 7314671855542107980ULL);
  ASSERT_EQ(three->members.size(), 3u);
  EXPECT_EQ(three->members[0].id(), 6658783250575691622ULL);   // c
  EXPECT_EQ(three->members[1].id(), 7314671855542107980ULL);   // a
  EXPECT_EQ(three->members[2].id(), 15196036224448573689ULL);  // b
  EXPECT_EQ(three->cluster_id, 13998566877082728973ULL);
}

TEST(ClusterConfigTest, Refusals) {
  Flags missing = MemberFlags("d", "http://127.0.0.1:42380");
  EXPECT_EQ(BuildClusterConfig(missing).status().code(), absl::StatusCode::kInvalidArgument);
  Flags wrong_url = MemberFlags("a", "http://127.0.0.1:9999");
  EXPECT_EQ(BuildClusterConfig(wrong_url).status().code(), absl::StatusCode::kInvalidArgument);
  Flags malformed = MemberFlags("a", "http://127.0.0.1:2380");
  malformed.initial_cluster = "a=http://127.0.0.1:2380,b";
  EXPECT_EQ(BuildClusterConfig(malformed).status().code(), absl::StatusCode::kInvalidArgument);
  Flags bad_url = MemberFlags("a", "http://127.0.0.1:2380");
  bad_url.initial_cluster = "a=http://127.0.0.1:2380,b=ftp://x";
  EXPECT_EQ(BuildClusterConfig(bad_url).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::server
