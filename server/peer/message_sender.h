// What the member's Raft loop hands its outgoing messages to: the peer transport, or a test's fake.
#pragma once

#include <vector>

#include "raft/raft.pb.h"

namespace leasehold::server {

// Where the node loop's outgoing Raft messages go. Send must not block for long; messages may be
// lost (Raft retries).
class MessageSender {
 public:
  virtual ~MessageSender() = default;
  virtual void Send(std::vector<raftpb::Message> messages) = 0;
};

}  // namespace leasehold::server
