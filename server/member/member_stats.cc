#include "server/member/member_stats.h"

#include "storage/blob/blob_table.h"

namespace leasehold::server {

MemberStats StatsOf(Member& member, const WatchHub* watch_hub) {
  Proposer& proposer = member.proposer();
  MemberStats stats;
  stats.has_leader = proposer.leader_id() != 0;
  stats.is_leader = member.IsLeader();
  stats.committed_index = proposer.committed_index();
  stats.applied_index = proposer.applied_index();
  stats.pending_proposals = proposer.pending_proposals();
  stats.quota_backend_bytes = member.config().quota_backend_bytes;
  stats.db_size_bytes = member.engine().ApproximateSize();
  stats.db_size_in_use_bytes = member.engine().ApproximateLiveSize();
  stats.revision = member.state_machine().revision();
  stats.leases = member.state_machine().leases().size();
  stats.member_id = member.config().member_id;
  stats.is_learner = member.LearnerRefusal().ok() == false;
  // etcd's cluster version is major.minor of the version every member runs.
  const std::string& version = member.config().version;
  stats.cluster_version = version.substr(0, version.rfind('.'));
  stats.auth_revision = member.state_machine().auth().revision();
  stats.compact_revision = member.state_machine().compacted_revision();
  stats.live_keys = member.state_machine().live_key_count();
  stats.open_read_views = member.engine().PinnedViews();
  if (watch_hub != nullptr) {
    const WatchHub::Stats watch = watch_hub->stats();
    stats.watchers = watch.watchers;
    stats.watch_streams = watch.streams;
    stats.slow_watchers = watch.slow_watchers;
    stats.pending_watch_revisions = watch.pending_revisions;
    stats.watch_events_sent = watch.events_sent;
  }
  member.state_machine().ReadBlobTable(
      [&](const storage::BlobTable& table) { stats.blobs = table.blob_count(); });
  return stats;
}

}  // namespace leasehold::server
