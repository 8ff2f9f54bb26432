#include "server/identity.h"

#include <random>

#include "absl/hash/hash.h"
#include "absl/strings/str_join.h"

namespace leasehold::server {

absl::StatusOr<internalpb::MemberIdentity> LoadOrCreateIdentity(storage::Engine* engine, const Flags& flags) {
  const std::string key = storage::keys::Meta("identity");
  internalpb::MemberIdentity identity;
  auto stored = engine->Get(key);
  if (stored.ok()) {
    if (!identity.ParseFromString(*stored)) return absl::DataLossError("malformed member identity record");
    return identity;
  }
  if (!absl::IsNotFound(stored.status())) return stored.status();
  // Ids are drawn once, here at creation; nothing replicated depends on this randomness.
  std::random_device device;
  const uint64_t salt = (static_cast<uint64_t>(device()) << 32) | device();
  const std::string peers = absl::StrJoin(flags.initial_advertise_peer_urls, ",");
  uint64_t member_id = absl::HashOf(flags.name, peers, flags.initial_cluster_token, salt);
  if (member_id == 0) member_id = 1;
  identity.set_member_id(member_id);
  identity.set_cluster_id(absl::HashOf(member_id, flags.initial_cluster_token) | 1);
  identity.set_name(flags.name);
  rocksdb::WriteBatch batch;
  batch.Put(key, identity.SerializeAsString());
  if (absl::Status st = engine->Write(&batch, true); !st.ok()) return st;
  return identity;
}

}  // namespace leasehold::server
