// Cluster: a synchronous in-memory harness of Raft nodes for scenario tests.
//
// Messages are queued and delivered by Deliver() until quiescent, except across cut links.
// Each node persists Ready batches into its own MemoryStorage and applies committed entries to
// a log of applied entries. Not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "raft/memory_storage.h"
#include "raft/node.h"

namespace leasehold::raft::testing {

struct ClusterNode {
  std::unique_ptr<MemoryStorage> storage;
  std::unique_ptr<Node> node;
  std::vector<pb::Entry> applied;      // committed entries, in apply order
  std::vector<ReadState> read_states;  // reads that became safe
  pb::ConfState conf_state;
  std::vector<uint64_t> boot_peers;  // initial voters the node was created with
};

class Cluster {
 public:
  using ConfigTweak = std::function<void(Config&)>;

  // Creates nodes `ids`, all with initial voters `ids`.
  explicit Cluster(const std::vector<uint64_t>& ids, ConfigTweak tweak = nullptr);

  // Adds a fresh node that knows the current membership `peers` (it is not yet a member; a conf
  // change adds it).
  void AddNode(uint64_t id, const std::vector<uint64_t>& peers);
  // Restarts a node from its storage, losing everything not persisted.
  void Restart(uint64_t id);

  Node& node(uint64_t id) { return *nodes_.at(id).node; }
  Raft& raft(uint64_t id) { return nodes_.at(id).node->raft(); }
  ClusterNode& state(uint64_t id) { return nodes_.at(id); }
  MemoryStorage& storage(uint64_t id) { return *nodes_.at(id).storage; }
  std::vector<uint64_t> ids() const;

  // Processes Ready batches of every node and delivers messages until nothing moves.
  void Deliver();
  // Processes Ready batches once without delivering; returns the queued messages.
  std::vector<pb::Message> Drain();
  void Tick(uint64_t id, int ticks = 1);
  void TickAll(int ticks = 1);

  void Cut(uint64_t a, uint64_t b);  // both directions
  void CutOneWay(uint64_t from, uint64_t to);
  void Isolate(uint64_t id);
  void Heal();
  // Drop messages of which `filter` returns true.
  void SetFilter(std::function<bool(const pb::Message&)> filter) { filter_ = std::move(filter); }

  // The unique node claiming leadership in the highest term, or 0.
  uint64_t Leader() const;
  // Elects `id` by campaigning and delivering.
  void Elect(uint64_t id);

  size_t messages_delivered() const { return delivered_; }

 private:
  void ProcessReady(uint64_t id);
  Config MakeConfig(uint64_t id, const std::vector<uint64_t>& peers) const;

  ConfigTweak tweak_;
  std::map<uint64_t, ClusterNode> nodes_;
  std::vector<pb::Message> queue_;
  std::set<std::pair<uint64_t, uint64_t>> cut_;
  std::function<bool(const pb::Message&)> filter_;
  size_t delivered_ = 0;
};

}  // namespace leasehold::raft::testing
