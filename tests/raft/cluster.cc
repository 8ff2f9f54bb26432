// Cluster harness implementation.
#include "tests/raft/cluster.h"

#include <cstdio>
#include <cstdlib>

namespace leasehold::raft::testing {

namespace {
void Must(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "cluster harness: %s\n", s.ToString().c_str());
    std::abort();
  }
}
}  // namespace

Cluster::Cluster(const std::vector<uint64_t>& ids, ConfigTweak tweak) : tweak_(std::move(tweak)) {
  for (uint64_t id : ids) {
    ClusterNode& n = nodes_[id];
    n.storage = std::make_unique<MemoryStorage>();
    n.boot_peers = ids;
    auto node = Node::Create(MakeConfig(id, ids));
    Must(node.status());
    n.node = *std::move(node);
  }
}

Config Cluster::MakeConfig(uint64_t id, const std::vector<uint64_t>& peers) const {
  Config c;
  c.id = id;
  c.election_ticks = 10;
  c.heartbeat_ticks = 1;
  c.storage = nodes_.at(id).storage.get();
  c.peers = peers;
  c.random_seed = id * 7919;
  if (tweak_) tweak_(c);
  return c;
}

void Cluster::AddNode(uint64_t id, const std::vector<uint64_t>& peers) {
  ClusterNode& n = nodes_[id];
  n.storage = std::make_unique<MemoryStorage>();
  n.boot_peers = peers;
  auto node = Node::Create(MakeConfig(id, peers));
  Must(node.status());
  n.node = *std::move(node);
}

void Cluster::Restart(uint64_t id) {
  ClusterNode& n = nodes_.at(id);
  // Membership comes from the snapshot; conf changes after it are re-applied from the log.
  Config c = MakeConfig(id, n.boot_peers);
  absl::StatusOr<pb::Snapshot> snap = n.storage->GetSnapshot();
  c.applied = snap.ok() ? snap->metadata().index() : 0;
  // The harness's state machine is the applied log: keep what the snapshot covers.
  while (!n.applied.empty() && n.applied.back().index() > c.applied) n.applied.pop_back();
  auto node = Node::Create(c);
  Must(node.status());
  n.node = *std::move(node);
}

std::vector<uint64_t> Cluster::ids() const {
  std::vector<uint64_t> out;
  for (const auto& [id, n] : nodes_) out.push_back(id);
  return out;
}

void Cluster::ProcessReady(uint64_t id) {
  ClusterNode& n = nodes_.at(id);
  while (n.node->HasReady()) {
    Ready rd = n.node->GetReady();
    if (rd.snapshot) {
      Must(n.storage->ApplySnapshot(*rd.snapshot));
      n.applied.clear();
      n.conf_state = rd.snapshot->metadata().conf_state();
    }
    Must(n.storage->Append(rd.entries));
    if (rd.hard_state) n.storage->SetHardState(*rd.hard_state);
    for (pb::Message& m : rd.messages) queue_.push_back(std::move(m));
    for (const pb::Entry& e : rd.committed_entries) {
      if (e.type() == pb::ENTRY_CONF_CHANGE) {
        pb::ConfChange cc;
        cc.ParseFromString(e.data());
        n.conf_state = n.node->ApplyConfChange(cc);
      }
      n.applied.push_back(e);
    }
    for (ReadState& r : rd.read_states) n.read_states.push_back(std::move(r));
    n.node->Advance(rd);
  }
}

std::vector<pb::Message> Cluster::Drain() {
  for (auto& [id, n] : nodes_) ProcessReady(id);
  return std::exchange(queue_, {});
}

void Cluster::Deliver() {
  for (;;) {
    std::vector<pb::Message> batch = Drain();
    if (batch.empty()) return;
    for (const pb::Message& m : batch) {
      const bool dropped =
          cut_.contains({m.from(), m.to()}) || !nodes_.contains(m.to()) || (filter_ && filter_(m));
      if (m.type() == pb::MSG_SNAPSHOT && nodes_.contains(m.from())) {
        nodes_.at(m.from()).node->ReportSnapshot(m.to(), !dropped);
      }
      if (dropped) continue;
      ++delivered_;
      (void)nodes_.at(m.to()).node->Step(m);
    }
  }
}

void Cluster::Tick(uint64_t id, int ticks) {
  for (int i = 0; i < ticks; ++i) {
    nodes_.at(id).node->Tick();
    Deliver();
  }
}

void Cluster::TickAll(int ticks) {
  for (int i = 0; i < ticks; ++i) {
    for (auto& [id, n] : nodes_) n.node->Tick();
    Deliver();
  }
}

void Cluster::Cut(uint64_t a, uint64_t b) {
  cut_.insert({a, b});
  cut_.insert({b, a});
}

void Cluster::CutOneWay(uint64_t from, uint64_t to) { cut_.insert({from, to}); }

void Cluster::Isolate(uint64_t id) {
  for (const auto& [other, n] : nodes_) {
    if (other != id) Cut(id, other);
  }
}

void Cluster::Heal() {
  cut_.clear();
  filter_ = nullptr;
}

uint64_t Cluster::Leader() const {
  uint64_t best = 0, best_term = 0;
  for (const auto& [id, n] : nodes_) {
    const Raft& r = n.node->raft();
    if (r.role() == Role::kLeader && r.term() >= best_term) {
      best = id;
      best_term = r.term();
    }
  }
  return best;
}

void Cluster::Elect(uint64_t id) {
  Must(nodes_.at(id).node->Campaign());
  Deliver();
}

}  // namespace leasehold::raft::testing
