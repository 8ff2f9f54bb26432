// Deterministic Raft simulation implementation: network model, crash-restart and invariants.
#include "tests/raft/simulation.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "raft/memory_storage.h"
#include "raft/node.h"

namespace leasehold::raft::sim {

namespace {

volatile std::sig_atomic_t g_seed_reporter_installed = 0;
uint64_t g_current_seed = 0;

void OnAbort(int) {
  char buf[96];
  const int n =
      std::snprintf(buf, sizeof(buf), "\nraft simulation aborted; replay with RAFT_SIM_SEED=%llu\n",
                    static_cast<unsigned long long>(g_current_seed));
  if (n > 0) {
    ssize_t ignored = write(2, buf, static_cast<size_t>(n));
    (void)ignored;
  }
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

struct InFlight {
  uint64_t deliver_at;
  pb::Message msg;
};

struct SimNode {
  uint64_t id = 0;
  MemoryStorage storage;       // survives crashes: the "disk"
  std::unique_ptr<Node> node;  // null while crashed
  uint64_t applied = 0;        // the application's applied index (its whole state)
  std::map<std::string, uint64_t> pending_reads;  // context -> min index required
};

struct Failure {
  std::string what;
};

class Simulation {
 public:
  explicit Simulation(const SimOptions& opt) : opt_(opt), rng_(opt.seed) {
    num_nodes_ = Chance(20) ? 1 : Chance(50) ? 3 : 5;  // 1: a sole voter, with a learner at times
    pre_vote_ = Chance(50);
    check_quorum_ = Chance(50);
    drop_pct_ = static_cast<int>(Uniform(15));
    dup_pct_ = static_cast<int>(Uniform(5));
    max_delay_ = static_cast<int>(Uniform(4));
    // Tiny messages (one entry each) separate a new leader's no-op from older entries, which
    // exposes commit-rule (figure 8) mistakes.
    const uint64_t sizes[] = {1, 64, 512};
    max_size_per_msg_ = sizes[Uniform(3)];
    for (uint64_t id = 1; id <= static_cast<uint64_t>(num_nodes_); ++id) {
      peers_.push_back(id);
      nodes_[id].id = id;
    }
    boot_peers_ = peers_;
    next_node_id_ = peers_.size() + 1;
    for (uint64_t id : peers_) Start(id);
  }

  SimResult Run() {
    SimResult res;
    res.nodes = num_nodes_;
    try {
      for (step_ = 0; step_ < static_cast<uint64_t>(opt_.chaos_steps); ++step_) {
        ChaosStep();
        CheckInvariants();
      }
      HealAll();
      const uint64_t calm_start = step_;
      const uint64_t final_value = RunCalm(calm_start);
      CheckConverged(final_value);
    } catch (const Failure& f) {
      res.ok = false;
      res.failure = absl::StrCat("seed ", opt_.seed, " step ", step_, ": ", f.what);
    }
    res.committed = max_committed_;
    res.elections = leaders_by_term_.size();
    res.reads_checked = reads_checked_;
    res.crashes = crashes_;
    res.snapshots_installed = snapshots_installed_;
    res.sent_before_persisting = sent_before_persisting_;
    return res;
  }

 private:
  // --- randomness: plain arithmetic on the engine output, identical everywhere ---
  uint64_t Uniform(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(int pct) { return static_cast<int>(Uniform(100)) < pct; }

  [[noreturn]] void Fail(std::string what) { throw Failure{std::move(what)}; }

  void Start(uint64_t id) {
    SimNode& n = nodes_[id];
    Config c;
    c.id = id;
    c.election_ticks = 10;
    c.heartbeat_ticks = 2;
    c.storage = &n.storage;
    // Conf changes after the snapshot (or from the start of the log) are re-applied on top.
    c.peers = boot_peers_;
    c.max_size_per_msg = max_size_per_msg_;
    c.max_inflight_msgs = 4;
    c.pre_vote = pre_vote_;
    c.check_quorum = check_quorum_;
    c.random_seed = opt_.seed * 1000003 + id * 7919 + restarts_++;
    absl::StatusOr<pb::Snapshot> snap = n.storage.GetSnapshot();
    c.applied = snap.ok() ? snap->metadata().index() : 0;
    n.applied = c.applied;
    n.pending_reads.clear();
    auto node = Node::Create(c);
    if (!node.ok()) Fail(absl::StrCat("restart of ", id, " failed: ", node.status().ToString()));
    n.node = *std::move(node);
  }

  void Crash(uint64_t id) {
    nodes_[id].node.reset();
    ++crashes_;
  }

  bool Up(uint64_t id) const {
    auto it = nodes_.find(id);
    return it != nodes_.end() && it->second.node != nullptr;
  }

  // --- one step of chaos ---
  void ChaosStep() {
    // Faults.
    const uint64_t r = Uniform(1000);
    if (r < 8) {
      Partition();
    } else if (r < 14) {
      // Asymmetric link failure.
      uint64_t a = peers_[Uniform(peers_.size())], b = peers_[Uniform(peers_.size())];
      if (a != b) cut_.insert({a, b});
    } else if (r < 30) {
      cut_.clear();
    } else if (r < 36) {
      uint64_t id = peers_[Uniform(peers_.size())];
      if (Up(id) && UpCount() > 1) Crash(id);
    } else if (r < 70) {
      for (uint64_t id : peers_) {
        if (!Up(id)) {
          Start(id);
          break;
        }
      }
    } else if (r < 90) {
      Compact(peers_[Uniform(peers_.size())]);
    } else if (r < 93) {
      uint64_t lead = CurrentLeader();
      if (lead != 0) (void)nodes_[lead].node->TransferLeadership(peers_[Uniform(peers_.size())]);
    } else if (r < 100) {
      ChangeMembership();
    }
    // Client traffic.
    if (Chance(30)) Propose(peers_[Uniform(peers_.size())]);
    if (Chance(10)) Read(peers_[Uniform(peers_.size())]);
    // Time and network.
    for (uint64_t id : peers_) {
      if (Up(id)) nodes_[id].node->Tick();
    }
    DeliverDue(/*faulty=*/true);
    ProcessAll(/*faulty=*/true);
    Decommission();
  }

  // Single-server changes on one extra node beyond the initial voters: add it as a learner,
  // promote it, remove it (with a sole voter: add and remove a learner); a removed node is shut
  // down for good once its removal is applied.
  void ChangeMembership() {
    const uint64_t lead = CurrentLeader();
    if (lead == 0) return;
    Node& leader = *nodes_[lead].node;
    const pb::ConfState cs = leader.raft().conf_state();
    pb::ConfChange cc;
    uint64_t extra_voter = 0;
    for (uint64_t v : cs.voters()) {
      if (!IsBootPeer(v)) extra_voter = v;
    }
    if (cs.learners_size() > 0) {
      // A sole voter keeps its learner a learner and later removes it: these runs are for a sole
      // voter, which commits on append. (Removing one of two voters is left out: this harness
      // shuts a removed node down at once, so the survivor may never hear the removal committed.)
      cc.set_type(num_nodes_ == 1 ? pb::CONF_REMOVE_NODE : pb::CONF_PROMOTE_LEARNER);
      cc.set_node_id(cs.learners(0));
    } else if (extra_voter != 0) {
      cc.set_type(pb::CONF_REMOVE_NODE);
      cc.set_node_id(extra_voter);
    } else {
      // Reuse a started node whose earlier add was lost, else start a new one.
      uint64_t id = 0;
      for (uint64_t p : peers_) {
        if (!IsBootPeer(p)) id = p;
      }
      if (id == 0) id = next_node_id_;
      cc.set_type(pb::CONF_ADD_LEARNER);
      cc.set_node_id(id);
    }
    if (!leader.ProposeConfChange(cc).ok()) return;
    const uint64_t id = cc.node_id();
    if (cc.type() == pb::CONF_ADD_LEARNER && !nodes_.contains(id)) {
      ++next_node_id_;
      nodes_[id].id = id;
      peers_.push_back(id);
      Start(id);
    }
  }

  bool IsBootPeer(uint64_t id) const {
    return std::find(boot_peers_.begin(), boot_peers_.end(), id) != boot_peers_.end();
  }

  void Decommission() {
    for (uint64_t id : removed_) {
      peers_.erase(std::remove(peers_.begin(), peers_.end(), id), peers_.end());
      nodes_.erase(id);
    }
    removed_.clear();
  }

  size_t UpCount() const {
    size_t n = 0;
    for (uint64_t id : peers_) n += Up(id);
    return n;
  }

  void Partition() {
    cut_.clear();
    std::vector<uint64_t> side;
    for (size_t i = 0; i < peers_.size(); ++i) side.push_back(Uniform(2));
    for (size_t i = 0; i < peers_.size(); ++i) {
      for (size_t j = 0; j < peers_.size(); ++j) {
        if (side[i] != side[j]) cut_.insert({peers_[i], peers_[j]});
      }
    }
  }

  void HealAll() {
    cut_.clear();
    for (uint64_t id : peers_) {
      if (!Up(id)) Start(id);
    }
  }

  uint64_t CurrentLeader() const {
    uint64_t best = 0, best_term = 0;
    for (uint64_t id : peers_) {
      if (!Up(id)) continue;
      const Raft& r = nodes_.at(id).node->raft();
      if (r.role() == Role::kLeader && r.term() >= best_term) {
        best = id;
        best_term = r.term();
      }
    }
    return best;
  }

  void Compact(uint64_t id) {
    SimNode& n = nodes_[id];
    if (!Up(id) || n.applied <= n.storage.FirstIndex()) return;
    absl::StatusOr<pb::Snapshot> snap =
        n.storage.CreateSnapshot(n.applied, n.node->raft().conf_state(), std::string());
    if (!snap.ok()) return;
    const uint64_t keep = Uniform(4);
    const uint64_t to = n.applied > keep ? n.applied - keep : n.applied;
    if (to >= n.storage.FirstIndex()) (void)n.storage.Compact(to);
  }

  void Propose(uint64_t id) {
    if (!Up(id)) return;
    std::string value = absl::StrCat("v", next_value_++);
    if (Chance(20)) {
      std::vector<std::string> batch = {value, absl::StrCat("v", next_value_++)};
      (void)nodes_[id].node->ProposeBatch(batch);
    } else {
      (void)nodes_[id].node->Propose(std::move(value));
    }
  }

  void Read(uint64_t id) {
    if (!Up(id)) return;
    std::string ctx = absl::StrCat("r", id, "-", next_read_++);
    // Every write committed anywhere before the read starts must be visible to it.
    if (nodes_[id].node->ReadIndex(ctx).ok()) nodes_[id].pending_reads[ctx] = max_committed_;
  }

  void Send(pb::Message m, bool faulty) {
    const bool cut = cut_.contains({m.from(), m.to()});
    const bool dropped = cut || (faulty && Chance(drop_pct_));
    if (m.type() == pb::MSG_SNAPSHOT && Up(m.from())) {
      nodes_[m.from()].node->ReportSnapshot(m.to(), !dropped);
    }
    if (dropped) return;
    const uint64_t delay = faulty ? Uniform(static_cast<uint64_t>(max_delay_) + 1) : 0;
    if (faulty && Chance(dup_pct_)) network_.push_back({step_ + delay + Uniform(3), m});
    network_.push_back({step_ + delay, std::move(m)});
  }

  void DeliverDue(bool faulty) {
    std::vector<pb::Message> due;
    std::vector<InFlight> later;
    for (InFlight& f : network_) {
      if (f.deliver_at <= step_)
        due.push_back(std::move(f.msg));
      else
        later.push_back(std::move(f));
    }
    network_ = std::move(later);
    if (faulty) {
      // Reorder (Fisher-Yates with the simulation's own generator).
      for (size_t i = due.size(); i > 1; --i) std::swap(due[i - 1], due[Uniform(i)]);
    }
    for (const pb::Message& m : due) {
      if (!Up(m.to()) || cut_.contains({m.from(), m.to()})) continue;
      (void)nodes_[m.to()].node->Step(m);
    }
  }

  void ProcessAll(bool faulty) {
    for (uint64_t id : peers_) {
      if (Up(id)) ProcessReady(id, faulty);
    }
  }

  void ProcessReady(uint64_t id, bool faulty) {
    SimNode& n = nodes_[id];
    while (n.node && n.node->HasReady()) {
      Ready rd = n.node->GetReady();
      // A leader may send before persisting when its Ready allows it, as the server's node loop
      // does. Half the time it does here, so that the crash below can lose a batch whose messages
      // are already out.
      const bool sent_first = rd.may_send_before_persisting && Uniform(2) == 0;
      if (sent_first) {
        for (pb::Message& m : rd.messages) Send(std::move(m), faulty);
        rd.messages.clear();
        ++sent_before_persisting_;
      }
      // A crash before persisting loses the whole batch (and everything unpersisted).
      if (faulty && Chance(1) && Uniform(3) == 0 && UpCount() > 1) {
        Crash(id);
        return;
      }
      if (rd.snapshot) {
        if (absl::Status s = n.storage.ApplySnapshot(*rd.snapshot); !s.ok()) {
          Fail(absl::StrCat("node ", id, " cannot persist snapshot: ", s.ToString()));
        }
        const auto& meta = rd.snapshot->metadata();
        auto it = committed_terms_.find(meta.index());
        if (it != committed_terms_.end() && it->second != meta.term()) {
          Fail(absl::StrCat("snapshot at ", meta.index(), " has term ", meta.term(),
                            " but the committed entry has term ", it->second));
        }
        n.applied = meta.index();
        ++snapshots_installed_;
      }
      if (!rd.entries.empty()) {
        (void)n.storage.Append(rd.entries);
        CheckLogMatching(id, rd.entries);
      }
      if (rd.hard_state) n.storage.SetHardState(*rd.hard_state);
      if (rd.soft_state && rd.soft_state->role == Role::kLeader) OnNewLeader(id);
      // A crash after persisting but before sending.
      if (faulty && Chance(1) && Uniform(3) == 0 && UpCount() > 1) {
        Crash(id);
        return;
      }
      for (pb::Message& m : rd.messages) Send(std::move(m), faulty);
      for (const pb::Entry& e : rd.committed_entries) Apply(id, e);
      for (const ReadState& rs : rd.read_states) {
        auto it = n.pending_reads.find(rs.context);
        if (it == n.pending_reads.end()) continue;
        if (rs.index < it->second) {
          Fail(absl::StrCat("read ", rs.context, " on node ", id, " got index ", rs.index,
                            " but index ", it->second, " was committed before it began"));
        }
        ++reads_checked_;
        n.pending_reads.erase(it);
      }
      n.node->Advance(rd);
      max_committed_ = std::max(max_committed_, n.node->raft().log().committed());
    }
  }

  void Apply(uint64_t id, const pb::Entry& e) {
    SimNode& n = nodes_[id];
    if (e.index() != n.applied + 1) {
      Fail(absl::StrCat("node ", id, " applies index ", e.index(), " after ", n.applied));
    }
    n.applied = e.index();
    auto [it, inserted] = applied_.try_emplace(e.index(), e);
    if (!inserted && (it->second.term() != e.term() || it->second.data() != e.data())) {
      Fail(absl::StrCat("node ", id, " applied (", e.index(), ",", e.term(), ",", e.data(),
                        ") but another node applied (", it->second.term(), ",", it->second.data(),
                        ")"));
    }
    committed_terms_[e.index()] = e.term();
    if (e.type() == pb::ENTRY_CONF_CHANGE) {
      pb::ConfChange cc;
      if (!cc.ParseFromString(e.data())) Fail("unparsable conf change");
      n.node->ApplyConfChange(cc);
      if (cc.type() == pb::CONF_REMOVE_NODE && nodes_.contains(cc.node_id())) {
        removed_.push_back(cc.node_id());
      }
    }
  }

  // Log matching, incrementally: an (index, term) pair identifies one entry, with one
  // predecessor term. By induction, equal (index, term) implies equal prefixes.
  void CheckLogMatching(uint64_t id, const std::vector<pb::Entry>& entries) {
    const SimNode& n = nodes_[id];
    for (const pb::Entry& e : entries) {
      absl::StatusOr<uint64_t> prev = n.storage.Term(e.index() - 1);
      const uint64_t prev_term = prev.ok() ? *prev : UINT64_MAX;  // compacted: unknown
      auto key = std::make_pair(e.index(), e.term());
      auto it = entries_seen_.find(key);
      if (it == entries_seen_.end()) {
        entries_seen_.emplace(key, EntryFacts{e.data(), e.type(), prev_term});
        continue;
      }
      EntryFacts& f = it->second;
      if (f.data != e.data() || f.type != e.type()) {
        Fail(absl::StrCat("two different entries at index ", e.index(), " term ", e.term()));
      }
      if (prev_term != UINT64_MAX) {
        if (f.prev_term == UINT64_MAX) {
          f.prev_term = prev_term;
        } else if (f.prev_term != prev_term) {
          Fail(absl::StrCat("log matching: entry (", e.index(), ",", e.term(), ") follows terms ",
                            f.prev_term, " and ", prev_term));
        }
      }
    }
  }

  void OnNewLeader(uint64_t id) {
    const Raft& r = nodes_[id].node->raft();
    auto [it, inserted] = leaders_by_term_.try_emplace(r.term(), id);
    if (!inserted && it->second != id) {
      Fail(absl::StrCat("two leaders in term ", r.term(), ": ", it->second, " and ", id));
    }
    // Leader completeness: every entry committed in an earlier term is in the new leader's log.
    const uint64_t first = r.log().FirstIndex();
    for (const auto& [index, term] : committed_terms_) {
      if (term >= r.term() || index < first) continue;
      absl::StatusOr<uint64_t> t = r.log().Term(index);
      if (!t.ok() || *t != term) {
        Fail(absl::StrCat("leader ", id, " of term ", r.term(), " lacks committed entry (", index,
                          ",", term, ")"));
      }
    }
  }

  void CheckInvariants() {
    // At most one leader per term among live nodes (OnNewLeader covers transitions; this catches
    // leaders that were already leading when a check runs).
    for (uint64_t id : peers_) {
      if (!Up(id)) continue;
      const Raft& r = nodes_[id].node->raft();
      if (r.role() != Role::kLeader) continue;
      auto [it, inserted] = leaders_by_term_.try_emplace(r.term(), id);
      if (!inserted && it->second != id) {
        Fail(absl::StrCat("two leaders in term ", r.term(), ": ", it->second, " and ", id));
      }
    }
  }

  // Heals everything and runs without faults; returns the id of a final proposal.
  uint64_t RunCalm(uint64_t calm_start) {
    const uint64_t deadline = calm_start + static_cast<uint64_t>(opt_.calm_ticks);
    std::string final_value;
    uint64_t proposed_at = 0;
    for (; step_ < deadline; ++step_) {
      for (uint64_t id : peers_) {
        if (Up(id)) nodes_[id].node->Tick();
      }
      DeliverDue(false);
      ProcessAll(false);
      Decommission();
      CheckInvariants();
      const uint64_t lead = CurrentLeader();
      // Liveness probe: a client proposes (retrying every 30 ticks, as a proposal accepted by a
      // leader that is then deposed can be lost) and it must be applied everywhere in time.
      if ((final_value.empty() || step_ - proposed_at >= 30) && lead != 0 &&
          nodes_[lead].node->raft().lead_transferee() == 0) {
        if (nodes_[lead].node->Propose(absl::StrCat("final-", opt_.seed)).ok()) {
          final_value = absl::StrCat("final-", opt_.seed);
          proposed_at = step_;
        }
      }
      if (!final_value.empty() && Converged(final_value)) return 1;
    }
    if (final_value.empty()) Fail(absl::StrCat("no leader elected after healing", Dump()));
    Fail(absl::StrCat("not converged within ", opt_.calm_ticks, " ticks after healing", Dump()));
  }

  std::string Dump() const {
    std::string out;
    for (uint64_t id : peers_) {
      const SimNode& n = nodes_.at(id);
      if (!n.node) {
        absl::StrAppend(&out, "\n  node ", id, " down");
        continue;
      }
      const Raft& r = n.node->raft();
      absl::StrAppend(&out, "\n  node ", id, " ", RoleName(r.role()), " term=", r.term(),
                      " lead=", r.lead(), " commit=", r.log().committed(), " applied=", n.applied,
                      " last=", r.log().LastIndex(), " first=", r.log().FirstIndex());
      if (r.role() == Role::kLeader) {
        for (const auto& [pid, pr] : r.progress()) {
          absl::StrAppend(&out, "\n    ", pid, ": ", pr.DebugString());
        }
      }
    }
    return out;
  }

  // Voters and learners in the current leader's configuration (all boot peers if none).
  std::vector<uint64_t> Members() const {
    const uint64_t lead = CurrentLeader();
    if (lead == 0) return boot_peers_;
    const pb::ConfState cs = nodes_.at(lead).node->raft().conf_state();
    std::vector<uint64_t> out(cs.voters().begin(), cs.voters().end());
    out.insert(out.end(), cs.learners().begin(), cs.learners().end());
    return out;
  }

  bool Converged(const std::string& final_value) const {
    uint64_t max_applied = 0;
    for (const auto& [index, e] : applied_) max_applied = std::max(max_applied, index);
    auto it = applied_.rbegin();
    bool final_applied = false;
    for (; it != applied_.rend() && !final_applied; ++it)
      final_applied = it->second.data() == final_value;
    if (!final_applied) return false;
    for (uint64_t id : Members()) {
      if (!Up(id) || nodes_.at(id).applied < max_applied) return false;
    }
    return true;
  }

  void CheckConverged(uint64_t) {
    // Every entry applied anywhere (an acknowledged proposal) is applied on every node: all nodes
    // reached the same applied index, and Apply() checked that contents agree index by index.
    uint64_t max_applied = applied_.empty() ? 0 : applied_.rbegin()->first;
    for (uint64_t id : Members()) {
      if (nodes_[id].applied != max_applied) {
        Fail(absl::StrCat("node ", id, " applied ", nodes_[id].applied, " of ", max_applied));
      }
    }
  }

  struct EntryFacts {
    std::string data;
    pb::EntryType type;
    uint64_t prev_term;
  };

  SimOptions opt_;
  std::mt19937_64 rng_;
  int num_nodes_ = 3;
  bool pre_vote_ = false;
  bool check_quorum_ = false;
  int drop_pct_ = 0;
  int dup_pct_ = 0;
  int max_delay_ = 0;
  uint64_t max_size_per_msg_ = 512;
  std::vector<uint64_t> peers_;       // running or restartable nodes
  std::vector<uint64_t> boot_peers_;  // the initial voters
  std::vector<uint64_t> removed_;     // removed by an applied conf change; shut down after the step
  uint64_t next_node_id_ = 0;
  std::map<uint64_t, SimNode> nodes_;
  std::vector<InFlight> network_;
  std::set<std::pair<uint64_t, uint64_t>> cut_;
  uint64_t step_ = 0;
  uint64_t restarts_ = 0;
  uint64_t next_value_ = 0;
  uint64_t next_read_ = 0;
  uint64_t max_committed_ = 0;
  uint64_t reads_checked_ = 0;
  uint64_t crashes_ = 0;
  uint64_t snapshots_installed_ = 0;
  uint64_t sent_before_persisting_ = 0;
  std::map<uint64_t, uint64_t> leaders_by_term_;
  std::map<uint64_t, pb::Entry> applied_;
  std::map<uint64_t, uint64_t> committed_terms_;
  std::map<std::pair<uint64_t, uint64_t>, EntryFacts> entries_seen_;
};

}  // namespace

SimResult RunSimulation(const SimOptions& options) {
  SetCurrentSeed(options.seed);
  Simulation sim(options);
  return sim.Run();
}

void InstallSeedReporter() {
  if (g_seed_reporter_installed) return;
  g_seed_reporter_installed = 1;
  std::signal(SIGABRT, OnAbort);
}

void SetCurrentSeed(uint64_t seed) { g_current_seed = seed; }

}  // namespace leasehold::raft::sim
