#include "server/command/identity.h"

namespace leasehold::server {

absl::StatusOr<internalpb::MemberIdentity> LoadOrCreateIdentity(storage::Engine* engine,
                                                                const std::string& name,
                                                                const ClusterConfig& cluster) {
  const std::string key = storage::keys::Meta("identity");
  internalpb::MemberIdentity identity;
  auto stored = engine->Get(key);
  if (stored.ok()) {
    if (!identity.ParseFromString(*stored))
      return absl::DataLossError("malformed member identity record");
    return identity;
  }
  if (!absl::IsNotFound(stored.status())) return stored.status();
  identity.set_member_id(cluster.self_id);
  identity.set_cluster_id(cluster.cluster_id);
  identity.set_name(name);
  rocksdb::WriteBatch batch;
  batch.Put(key, identity.SerializeAsString());
  if (absl::Status st = engine->Write(&batch, true); !st.ok()) return st;
  return identity;
}

}  // namespace leasehold::server
