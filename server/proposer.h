// The path from request handlers to the replicated state machine. The single-node implementation
// (LocalProposer) persists and applies in order; the Raft node loop replaces it without the gRPC
// services changing.
#pragma once

#include <cstdint>
#include <functional>

#include "leasehold/internal.pb.h"
#include "storage/state_machine.h"

namespace leasehold::server {

class Proposer {
 public:
  using Done = std::function<void(storage::ApplyResult)>;
  virtual ~Proposer() = default;

  // Makes `entry` durable, applies it in log order and then calls `done` with the result, on the
  // apply thread (so `done` must not block). On failure before apply, `done` gets an Unavailable
  // status (etcd's "server stopped" when shutting down). Thread-safe.
  virtual void Propose(internalpb::InternalRequest entry, Done done) = 0;

  // Highest log index made durable, and highest applied.
  virtual uint64_t committed_index() const = 0;
  virtual uint64_t applied_index() const = 0;
  virtual uint64_t term() const = 0;
};

}  // namespace leasehold::server
