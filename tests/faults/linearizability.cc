#include "tests/faults/linearizability.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <unordered_set>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

namespace leasehold::faults {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

using Kind = RegisterOp::Kind;
using Outcome = RegisterOp::Outcome;

// What the search needs of an operation: its effect on the register and its interval.
struct Step {
  Kind kind;
  bool certain;  // false: outcome unknown
  int64_t value;
  int64_t expected;
};

// The register's sequential specification. Returns false if `op` cannot happen in `state`.
bool Apply(const Step& op, int64_t* state) {
  switch (op.kind) {
    case Kind::kRead:
      return *state == op.value;
    case Kind::kWrite:
      *state = op.value;
      return true;
    case Kind::kCas:
      if (*state == op.expected) {
        *state = op.value;
        return true;
      }
      return !op.certain;  // an unknown CAS may have found another value and done nothing
  }
  return false;
}

struct Configuration {
  std::vector<uint64_t> linearized;
  int64_t state;
  bool operator==(const Configuration& o) const {
    return state == o.state && linearized == o.linearized;
  }
  template <typename H>
  friend H AbslHashValue(H h, const Configuration& c) {
    return H::combine(std::move(h), c.state, c.linearized);
  }
};

// The call and return events of all operations, in time order, as a doubly linked list from which
// an operation's two events are unlinked while it is tentatively linearized.
class EventList {
 public:
  explicit EventList(const std::vector<RegisterOp>& ops) {
    const size_t n = ops.size();
    struct Event {
      int64_t time;
      bool is_return;
      size_t op;
    };
    std::vector<Event> events;
    events.reserve(2 * n);
    for (size_t i = 0; i < n; ++i) {
      events.push_back({ops[i].call_ns, false, i});
      const int64_t ret = ops[i].outcome == Outcome::kUnknown ? kNever : ops[i].return_ns;
      events.push_back({std::max(ret, ops[i].call_ns), true, i});
    }
    // At equal times calls go first: the operations are then concurrent (the permissive reading).
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return a.time != b.time ? a.time < b.time : (!a.is_return && b.is_return);
    });
    nodes_.resize(2 * n + 1);  // node 0 is the head sentinel
    call_of_.assign(n, 0);
    return_of_.assign(n, 0);
    for (size_t i = 0; i < events.size(); ++i) {
      Node& node = nodes_[i + 1];
      node.op = events[i].op;
      node.is_return = events[i].is_return;
      node.prev = i;
      node.next = i + 2 <= events.size() ? i + 2 : 0;
      (events[i].is_return ? return_of_ : call_of_)[events[i].op] = i + 1;
    }
    nodes_[0].next = events.empty() ? 0 : 1;
  }

  size_t first() const { return nodes_[0].next; }  // 0: empty
  size_t next(size_t node) const { return nodes_[node].next; }
  bool is_return(size_t node) const { return nodes_[node].is_return; }
  size_t op(size_t node) const { return nodes_[node].op; }

  void Lift(size_t op) {
    Unlink(call_of_[op]);
    Unlink(return_of_[op]);
  }
  void Unlift(size_t op) {  // exact reverse of Lift
    Relink(return_of_[op]);
    Relink(call_of_[op]);
  }
  size_t call_node(size_t op) const { return call_of_[op]; }

 private:
  struct Node {
    size_t op = 0;
    bool is_return = false;
    size_t prev = 0, next = 0;
  };
  void Unlink(size_t i) {
    nodes_[nodes_[i].prev].next = nodes_[i].next;
    if (nodes_[i].next != 0) nodes_[nodes_[i].next].prev = nodes_[i].prev;
  }
  void Relink(size_t i) {
    nodes_[nodes_[i].prev].next = i;
    if (nodes_[i].next != 0) nodes_[nodes_[i].next].prev = i;
  }
  std::vector<Node> nodes_;
  std::vector<size_t> call_of_, return_of_;
};

// Drops what cannot change the verdict and bounds unknown operations (see the header).
std::vector<RegisterOp> Prune(std::vector<RegisterOp> ops) {
  std::vector<RegisterOp> kept;
  for (RegisterOp& op : ops) {
    if (op.kind == Kind::kRead && op.outcome != Outcome::kOk) continue;
    if (op.outcome == Outcome::kFail) continue;
    kept.push_back(std::move(op));
  }
  // Earliest return of an operation that observed each value (a read of it, or a CAS expecting it
  // that did swap), iterated because a kept unknown CAS observes its expected value in turn.
  for (;;) {
    absl::flat_hash_map<int64_t, int64_t> first_observed;
    auto observe = [&](int64_t value, int64_t when) {
      auto [it, fresh] = first_observed.emplace(value, when);
      if (!fresh) it->second = std::min(it->second, when);
    };
    for (const RegisterOp& op : kept) {
      if (op.kind == Kind::kRead) observe(op.value, op.return_ns);
      if (op.kind == Kind::kCas)
        observe(op.expected, op.outcome == Outcome::kOk ? op.return_ns : kNever);
    }
    std::vector<RegisterOp> next;
    bool changed = false;
    for (RegisterOp& op : kept) {
      if (op.outcome == Outcome::kUnknown && op.kind != Kind::kRead) {
        auto it = first_observed.find(op.value);
        if (it == first_observed.end()) {
          changed = true;
          continue;
        }
        if (it->second != kNever) {
          op.outcome = Outcome::kOk;
          op.return_ns = std::max(op.call_ns, it->second);
          // A CAS seen to have written its value did swap.
          changed = true;
        }
      }
      next.push_back(std::move(op));
    }
    kept = std::move(next);
    if (!changed) return kept;
  }
}

// `ops` without those in `remove`, and without what then observes a value nobody left writes (a
// read of a write that is gone says nothing on its own).
std::vector<RegisterOp> Without(const std::vector<RegisterOp>& ops,
                                const std::vector<bool>& remove) {
  absl::flat_hash_map<int64_t, bool> written;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!remove[i] && ops[i].kind != Kind::kRead) written[ops[i].value] = true;
  }
  std::vector<RegisterOp> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (remove[i]) continue;
    const RegisterOp& op = ops[i];
    const int64_t observed = op.kind == Kind::kRead  ? op.value
                             : op.kind == Kind::kCas ? op.expected
                                                     : 0;
    if (observed != 0 && !written.contains(observed)) continue;
    out.push_back(op);
  }
  return out;
}

// Delta debugging: removes ever smaller chunks while the rest still fails, within a time budget.
std::vector<RegisterOp> Shrink(std::vector<RegisterOp> ops) {
  std::sort(ops.begin(), ops.end(),
            [](const RegisterOp& a, const RegisterOp& b) { return a.call_ns < b.call_ns; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  size_t chunk = std::max<size_t>(1, ops.size() / 2);
  while (std::chrono::steady_clock::now() < deadline) {
    bool removed = false;
    for (size_t at = 0; at < ops.size() && std::chrono::steady_clock::now() < deadline;) {
      std::vector<bool> remove(ops.size(), false);
      for (size_t i = at; i < std::min(ops.size(), at + chunk); ++i) remove[i] = true;
      std::vector<RegisterOp> rest = Without(ops, remove);
      if (!rest.empty() && rest.size() < ops.size() && !IsLinearizable(rest)) {
        ops = std::move(rest);
        removed = true;
      } else {
        at += chunk;
      }
    }
    if (!removed) {
      if (chunk == 1) break;
      chunk = std::max<size_t>(1, chunk / 2);
    }
  }
  return ops;
}

}  // namespace

bool IsLinearizable(const std::vector<RegisterOp>& ops, size_t* configurations) {
  const size_t n = ops.size();
  std::vector<Step> steps;
  steps.reserve(n);
  for (const RegisterOp& op : ops) {
    steps.push_back({op.kind, op.outcome != Outcome::kUnknown, op.value, op.expected});
  }
  EventList events(ops);
  std::unordered_set<Configuration, absl::Hash<Configuration>> seen;
  Configuration current{std::vector<uint64_t>((n + 63) / 64, 0), 0};
  struct Frame {
    size_t op;
    int64_t state_before;
  };
  std::vector<Frame> stack;
  size_t node = events.first();
  bool result = true;
  while (events.first() != 0) {
    if (node != 0 && !events.is_return(node)) {
      const size_t op = events.op(node);
      int64_t state = current.state;
      if (Apply(steps[op], &state)) {
        Configuration next = current;
        next.linearized[op / 64] |= uint64_t{1} << (op % 64);
        next.state = state;
        if (seen.insert(next).second) {
          stack.push_back({op, current.state});
          current = std::move(next);
          events.Lift(op);
          node = events.first();
          continue;
        }
      }
      node = events.next(node);
      continue;
    }
    // A return reached (or the list's end): the operation it closes was not linearized in time.
    if (stack.empty()) {
      result = false;
      break;
    }
    const Frame top = stack.back();
    stack.pop_back();
    current.linearized[top.op / 64] &= ~(uint64_t{1} << (top.op % 64));
    current.state = top.state_before;
    events.Unlift(top.op);
    node = events.next(events.call_node(top.op));
  }
  if (configurations != nullptr) *configurations = seen.size();
  return result;
}

LinearizabilityResult CheckRegisters(const std::vector<RegisterOp>& history) {
  std::map<std::string, std::vector<RegisterOp>> by_key;
  for (const RegisterOp& op : history) by_key[op.key].push_back(op);
  LinearizabilityResult result;
  result.keys = by_key.size();
  for (auto& [key, ops] : by_key) {
    std::vector<RegisterOp> pruned = Prune(std::move(ops));
    result.ops_checked += pruned.size();
    size_t configurations = 0;
    if (!IsLinearizable(pruned, &configurations)) {
      result.linearizable = false;
      result.failing_key = key;
      result.failing_ops = Shrink(std::move(pruned));
      result.configurations += configurations;
      return result;
    }
    result.configurations += configurations;
  }
  return result;
}

std::string Describe(const RegisterOp& op) {
  const char* outcome = op.outcome == Outcome::kOk     ? "ok"
                        : op.outcome == Outcome::kFail ? "fail"
                                                       : "unknown";
  std::string what;
  switch (op.kind) {
    case Kind::kRead:
      what = absl::StrCat("read ", op.key, " -> ", op.value);
      break;
    case Kind::kWrite:
      what = absl::StrCat("write ", op.key, " := ", op.value);
      break;
    case Kind::kCas:
      what = absl::StrCat("cas ", op.key, " ", op.expected, " -> ", op.value);
      break;
  }
  return absl::StrCat("process ", op.process, " op ", op.id, ": ", what, " (", outcome, ") [",
                      op.call_ns / 1000, " us, ",
                      op.outcome == Outcome::kUnknown ? std::string("never")
                                                      : absl::StrCat(op.return_ns / 1000, " us"),
                      "]");
}

}  // namespace leasehold::faults
