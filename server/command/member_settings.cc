#include "server/command/member_settings.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/observability/log.h"

namespace leasehold::server {
namespace {

// A new leader honours every replicated deadline plus this allowance; renewals beyond it are
// checkpointed before they are acknowledged (Member::RenewLease), so none is revoked early.
int64_t LeaseAllowanceMs(const Flags& flags) { return flags.election_timeout_ms / 2; }

}  // namespace

int64_t RequestTimeoutMs(const Flags& flags) { return 5000 + 2 * flags.election_timeout_ms; }

NodeLoop::Options NodeLoopOptionsFrom(const Flags& flags,
                                      const internalpb::MemberIdentity& identity,
                                      const ClusterConfig& cluster) {
  NodeLoop::Options node_options;
  node_options.id = identity.member_id();
  if (flags.initial_cluster_state == "new") node_options.bootstrap_members = cluster.members;
  node_options.self.set_id(identity.member_id());
  node_options.self.set_name(flags.name);
  for (const auto& url : flags.advertise_client_urls) node_options.self.add_client_urls(url);
  node_options.tick_ms = flags.heartbeat_interval_ms;
  node_options.election_ticks = static_cast<int>(
      std::max<int64_t>(2, flags.election_timeout_ms / flags.heartbeat_interval_ms));
  node_options.request_timeout_ms = RequestTimeoutMs(flags);
  node_options.pre_vote = flags.pre_vote;
  node_options.replay_before_start = flags.force_new_cluster;
  node_options.warning_apply_duration_us = flags.warning_apply_duration_us;
  node_options.snapshot_count = static_cast<uint64_t>(flags.snapshot_count);
  node_options.strict_reconfig_check = flags.strict_reconfig_check;
  node_options.catch_up_entries = std::min<uint64_t>(
      static_cast<uint64_t>(flags.snapshot_catchup_entries), node_options.snapshot_count);
  node_options.on_removed = [] {
    LogWarn("this member was removed from the cluster; shutting down");
    kill(getpid(), SIGTERM);
  };
  // etcd's own log lines for this moment, in its words: tools that start etcd and wait for it to be
  // ready (etcd's end-to-end test framework among them) look for them.
  node_options.on_published = [self = node_options.self, api = MemberConfig().version] {
    LogInfo("published local member to cluster through raft",
            {{"local-member-id", absl::StrCat(absl::Hex(self.id()))},
             {"local-member-name", self.name()},
             {"local-member-client-urls", absl::StrJoin(self.client_urls(), ",")}});
    LogInfo("enabled capabilities for version",
            {{"cluster-version", api.substr(0, api.rfind('.'))}});
    LogInfo("ready to serve client requests");
  };
  node_options.promote_allowance_ms = LeaseAllowanceMs(flags);
  return node_options;
}

MemberConfig MemberConfigFrom(const Flags& flags, const internalpb::MemberIdentity& identity) {
  MemberConfig config;
  config.name = flags.name;
  config.cluster_id = identity.cluster_id();
  config.member_id = identity.member_id();
  config.client_urls = flags.advertise_client_urls;
  config.peer_urls = flags.initial_advertise_peer_urls;
  config.max_request_bytes = flags.max_request_bytes;
  config.max_txn_ops = flags.max_txn_ops;
  config.quota_backend_bytes = flags.quota_backend_bytes == 0
                                   ? (int64_t{2} << 30)
                                   : std::max<int64_t>(0, flags.quota_backend_bytes);
  config.lease_allowance_ms = LeaseAllowanceMs(flags);
  config.lease_lookahead_ms = flags.election_timeout_ms - LeaseAllowanceMs(flags);
  config.request_timeout_ms = RequestTimeoutMs(flags);
  config.bcrypt_cost = flags.bcrypt_cost;
  config.strict_reconfig_check = flags.strict_reconfig_check;
  config.client_cert_auth = flags.client_tls.client_cert_auth;
  return config;
}

ExpiryLoop::Options ExpiryLoopOptionsFrom(const Flags& flags) {
  ExpiryLoop::Options options;
  options.revoke_rate_per_second = flags.lease_revoke_rate;
  options.checkpoint_interval_ms = flags.lease_checkpoint_interval_ms;
  options.retry_ms = RequestTimeoutMs(flags);
  return options;
}

}  // namespace leasehold::server
