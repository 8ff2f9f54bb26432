// ReadOnly: the leader's queue of ReadIndex requests awaiting heartbeat confirmation by a quorum.
//
// Not thread-safe. Requests are identified by their context, which the caller must keep unique
// among outstanding reads. A quorum ack for one request also confirms every request queued
// before it, since leadership at a later moment implies leadership at the earlier one.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "raft/storage.h"

namespace leasehold::raft {

// A read that is safe to serve once the local state machine has applied `index`.
struct ReadState {
  uint64_t index = 0;
  std::string context;
};

struct PendingRead {
  uint64_t index = 0;  // the leader's commit index when the request arrived
  uint64_t from = 0;   // requester (the leader itself for local reads)
  std::string context;
  std::set<uint64_t> acks;
};

class ReadOnly {
 public:
  // Queues a request; a duplicate context already pending is ignored.
  void Add(uint64_t commit_index, uint64_t from, const std::string& context);
  // Records a heartbeat ack for `context`; returns everyone who acked it so far (null if the
  // context is unknown). The caller decides which acks count towards a quorum.
  const std::set<uint64_t>* RecvAck(uint64_t from, const std::string& context);
  // Removes and returns every request up to and including `context`.
  std::vector<PendingRead> Advance(const std::string& context);
  // Context of the newest pending request, or empty.
  std::string LastPendingContext() const;
  bool empty() const { return queue_.empty(); }
  void Reset();

 private:
  std::map<std::string, PendingRead> pending_;
  std::deque<std::string> queue_;
};

}  // namespace leasehold::raft
