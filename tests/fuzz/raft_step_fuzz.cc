// libFuzzer target: the Raft library's Step. The first byte picks one of two modes.
//  - Schedule (even): three correct nodes, with the input deciding everything the network and the
//    clock may do: which queued message is delivered next, dropped or duplicated, which node ticks,
//    proposes, campaigns or restarts from its storage. After every action the safety invariants
//    are checked: at most one leader per term, and every node's applied entries are a prefix of
//    one common log (no two nodes apply different entries at an index).
//  - Hostile (odd): one node of a three-node group is fed arbitrary messages decoded from the
//    input, mixed with ticks and proposals. Step's contract is that a peer's message never
//    crashes the node; nothing else is promised for messages no correct peer would send.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "raft/memory_storage.h"
#include "raft/node.h"
#include "tests/raft/cluster.h"

namespace {

using leasehold::raft::Role;
namespace pb = leasehold::raft::pb;

struct Input {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  bool empty() const { return at >= size; }
  uint8_t Byte() { return at < size ? data[at++] : 0; }
};

[[noreturn]] void Violation(const char* what, uint64_t a, uint64_t b) {
  std::fprintf(stderr, "raft safety violated: %s (%llu, %llu)\n", what,
               static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  std::abort();
}

class ScheduleRun {
 public:
  ScheduleRun()
      : cluster_({1, 2, 3}, [](leasehold::raft::Config& c) {
          c.check_quorum = true;
          c.pre_vote = true;
        }) {}

  void Run(Input& in) {
    int proposals = 0;
    while (!in.empty()) {
      for (pb::Message& m : cluster_.Drain()) pending_.push_back(std::move(m));
      const uint8_t op = in.Byte() % 8;
      const uint64_t node = 1 + in.Byte() % 3;
      switch (op) {
        case 0:
        case 1:
          if (!pending_.empty()) Deliver(in.Byte() % pending_.size(), /*keep=*/false);
          break;
        case 2:
          if (!pending_.empty()) Deliver(in.Byte() % pending_.size(), /*keep=*/true);
          break;
        case 3:
          if (!pending_.empty()) pending_.erase(pending_.begin() + in.Byte() % pending_.size());
          break;
        case 4:
          cluster_.Tick(node, 1 + in.Byte() % 12);
          break;
        case 5:
          (void)cluster_.node(node).Propose("p" + std::to_string(proposals++));
          break;
        case 6:
          (void)cluster_.raft(node).Campaign();
          break;
        case 7:
          cluster_.Drain();  // persist what the node has before it "crashes"
          cluster_.Restart(node);
          break;
      }
      CheckInvariants();
    }
  }

 private:
  void Deliver(size_t i, bool keep) {
    pb::Message m = pending_[i];
    if (!keep) pending_.erase(pending_.begin() + static_cast<long>(i));
    (void)cluster_.node(m.to()).Step(m);
  }

  void CheckInvariants() {
    for (uint64_t id : cluster_.ids()) {
      const auto& raft = cluster_.raft(id);
      if (raft.role() == Role::kLeader) {
        auto [it, fresh] = leaders_.emplace(raft.term(), id);
        if (!fresh && it->second != id) Violation("two leaders in one term", it->second, id);
      }
      for (const pb::Entry& e : cluster_.state(id).applied) {
        auto [it, fresh] = committed_.emplace(e.index(), std::make_pair(e.term(), e.data()));
        if (!fresh && (it->second.first != e.term() || it->second.second != e.data())) {
          Violation("two entries applied at one index", e.index(), id);
        }
      }
    }
  }

  leasehold::raft::testing::Cluster cluster_;
  std::vector<pb::Message> pending_;
  std::map<uint64_t, uint64_t> leaders_;                            // term -> leader
  std::map<uint64_t, std::pair<uint64_t, std::string>> committed_;  // index -> (term, data)
};

void HostileRun(Input& in) {
  leasehold::raft::testing::Cluster cluster({1, 2, 3});
  while (!in.empty()) {
    cluster.Drain();
    const uint8_t op = in.Byte() % 4;
    if (op == 0) {
      cluster.Tick(1, 1 + in.Byte() % 12);
    } else if (op == 1) {
      (void)cluster.node(1).Propose("x");
    } else {
      const size_t length = std::min<size_t>(in.Byte(), in.size - in.at);
      pb::Message m;
      if (m.ParseFromArray(in.data + in.at, static_cast<int>(length))) {
        m.set_to(1);
        (void)cluster.node(1).Step(m);
      }
      in.at += length;
    }
  }
  cluster.Drain();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  if (in.Byte() % 2 == 0) {
    ScheduleRun().Run(in);
  } else {
    HostileRun(in);
  }
  return 0;
}
