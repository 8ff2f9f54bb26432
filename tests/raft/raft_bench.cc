// raft_bench: committed entries per CPU-second for a 3-node in-memory cluster, 100-byte proposals.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "raft/memory_storage.h"
#include "raft/node.h"

namespace leasehold::raft {
namespace {

void Must(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "raft_bench: %s\n", s.ToString().c_str());
    std::abort();
  }
}

// Three nodes delivering messages synchronously; the application only counts applied entries
// and compacts storage periodically so memory stays bounded.
class BenchCluster {
 public:
  BenchCluster() {
    for (uint64_t id = 1; id <= 3; ++id) {
      Member& m = members_[id];
      m.storage = std::make_unique<MemoryStorage>();
      Config c;
      c.id = id;
      c.storage = m.storage.get();
      c.peers = {1, 2, 3};
      c.random_seed = id;
      c.max_inflight_msgs = 256;
      auto node = Node::Create(c);
      Must(node.status());
      m.node = *std::move(node);
    }
    Must(members_[1].node->Campaign());
    Pump();
  }

  Node& leader() { return *members_[1].node; }
  uint64_t applied(uint64_t id) { return members_[id].applied; }

  // Processes every Ready and delivers messages until quiescent.
  void Pump() {
    for (;;) {
      std::vector<pb::Message> out;
      for (auto& [id, m] : members_) {
        while (m.node->HasReady()) {
          Ready rd = m.node->GetReady();
          if (rd.snapshot) Must(m.storage->ApplySnapshot(*rd.snapshot));
          Must(m.storage->Append(rd.entries));
          if (rd.hard_state) m.storage->SetHardState(*rd.hard_state);
          for (pb::Message& msg : rd.messages) out.push_back(std::move(msg));
          if (!rd.committed_entries.empty()) m.applied = rd.committed_entries.back().index();
          m.node->Advance(rd);
          if (m.applied - m.compacted > 20000) {
            Must(m.storage->CreateSnapshot(m.applied, m.node->raft().conf_state(), "").status());
            Must(m.storage->Compact(m.applied - 1000));
            m.compacted = m.applied;
          }
        }
      }
      if (out.empty()) return;
      for (const pb::Message& msg : out) (void)members_[msg.to()].node->Step(msg);
    }
  }

 private:
  struct Member {
    std::unique_ptr<MemoryStorage> storage;
    std::unique_ptr<Node> node;
    uint64_t applied = 0;
    uint64_t compacted = 0;
  };
  std::map<uint64_t, Member> members_;
};

const std::string kPayload(100, 'p');

// One proposal per round trip: propose, replicate, commit, apply.
void BM_CommitUnbatched(benchmark::State& state) {
  BenchCluster c;
  const uint64_t start = c.applied(3);
  for (auto _ : state) {
    Must(c.leader().Propose(kPayload));
    c.Pump();
  }
  state.SetItemsProcessed(static_cast<int64_t>(c.applied(3) - start));
  state.SetLabel("committed entries/s of CPU (items_per_second)");
}
BENCHMARK(BM_CommitUnbatched);

// `range(0)` proposals accepted before one replication round (one append per follower).
void BM_CommitBatched(benchmark::State& state) {
  BenchCluster c;
  const uint64_t start = c.applied(3);
  const int batch = static_cast<int>(state.range(0));
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) Must(c.leader().Propose(kPayload));
    c.Pump();
  }
  state.SetItemsProcessed(static_cast<int64_t>(c.applied(3) - start));
  state.SetLabel("committed entries/s of CPU (items_per_second)");
}
BENCHMARK(BM_CommitBatched)->Arg(16)->Arg(256);

}  // namespace
}  // namespace leasehold::raft

BENCHMARK_MAIN();
