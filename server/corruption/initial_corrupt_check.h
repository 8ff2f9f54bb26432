// etcd's --experimental-initial-corrupt-check: before a member serves clients, it hashes its
// key-value history at its own revision (HashKV) and asks every peer, on its peer URLs as etcd
// does, for the hash at that revision. A peer at the same compact revision with another hash means
// one of them holds different data: the member refuses to start ("found data inconsistency with
// peers"). A peer that cannot answer (down, behind that revision, compacted past it, at another
// compact revision) is logged and left out, as etcd leaves it out.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/member/member.h"
#include "server/tls/tls_files.h"

namespace leasehold::server {

// Answers HashKV on the peer port, where members ask each other (no auth: peers carry no token, and
// the peer port is the cluster's own). Only HashKV is served there: gRPC answers every other
// Maintenance method with its "not implemented" status, as for any method a server does not offer.
class PeerHashKvService final : public etcdserverpb::Maintenance::CallbackService {
 public:
  // `member` is not owned.
  explicit PeerHashKvService(Member* member) : member_(member) {}
  grpc::ServerUnaryReactor* HashKV(grpc::CallbackServerContext* context,
                                   const etcdserverpb::HashKVRequest* request,
                                   etcdserverpb::HashKVResponse* response) override;

 private:
  Member* const member_;
};

// One peer's answer: its hash and compact revision, or why it gave none.
struct PeerHash {
  uint64_t member_id = 0;
  std::optional<etcdserverpb::HashKVResponse> response;
  absl::Status error;
};

// Asks member `peer` for its hash at `revision`, trying its peer URLs in turn (with `peer_tls`),
// each within `timeout`.
PeerHash AskPeerHash(const internalpb::MemberRecord& peer, int64_t revision,
                     const TlsFiles& peer_tls, absl::Duration timeout);

// The verdict on the peers' answers (each logged): FailedPrecondition "<member id in hex> found
// data inconsistency with peers" when any peer at `local_compact_revision` hashed differently.
[[nodiscard]] absl::Status JudgePeerHashes(uint64_t self_id, uint32_t local_hash,
                                           int64_t local_compact_revision,
                                           const std::vector<PeerHash>& peers);

// Hashes this member's history at its revision and judges every other member's hash at it, each
// asked on its peer URLs (with `peer_tls`) within `timeout`.
[[nodiscard]] absl::Status CheckInitialHashKv(Member& member, const TlsFiles& peer_tls,
                                              absl::Duration timeout);

}  // namespace leasehold::server
