#include "server/member/member_stats.h"

#include "storage/blob/blob_table.h"

namespace leasehold::server {

MemberStats StatsOf(Member& member) {
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
  member.state_machine().ReadBlobTable(
      [&](const storage::BlobTable& table) { stats.blobs = table.blob_count(); });
  return stats;
}

}  // namespace leasehold::server
