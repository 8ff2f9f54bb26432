// A linearizability checker for read / write / compare-and-set registers, in the Wing–Gong style
// with Lowe's just-in-time search and a memo of (operations linearized, register value) pairs:
// the search backtracks only over configurations it has not seen, which keeps typical histories
// of ~10,000 operations per register in seconds.
//
// Histories are split by key first (a history is linearizable iff each key's is:
// P-compositionality). Before the search, each key's history is pruned without changing the
// verdict:
//  - reads and definitely-failed operations whose outcome is unknown or that had no effect are
//    dropped (a CAS answered "not swapped" is dropped too, as Jepsen does);
//  - an operation of unknown outcome (a timeout: it may or may not have happened) whose written
//    value nobody observed is dropped: "it never happened" is always a valid choice for it;
//  - one whose value was observed must have happened before the first observer returned, so it
//    gets that return time instead of "never returned".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace leasehold::faults {

struct RegisterOp {
  enum class Kind { kRead, kWrite, kCas };
  enum class Outcome { kOk, kFail, kUnknown };
  Kind kind = Kind::kRead;
  Outcome outcome = Outcome::kOk;
  std::string key;
  int64_t value = 0;      // read: the value seen (0: absent); write: written; cas: the new value
  int64_t expected = 0;   // cas: the value compared against
  int64_t call_ns = 0;    // when the client sent it
  int64_t return_ns = 0;  // when the answer arrived (ignored for kUnknown)
  int process = 0;        // the client that issued it
  int64_t id = 0;         // caller's identifier, echoed in reports
};

struct LinearizabilityResult {
  bool linearizable = true;
  size_t keys = 0;
  size_t ops_checked = 0;     // after pruning
  size_t configurations = 0;  // memo entries explored
  std::string failing_key;
  // A small sub-history of the failing key that is by itself not linearizable, shrunk by delta
  // debugging until no single operation can be removed (or 20 s ran out). A write stays while an
  // operation that observed its value does. Empty when linearizable.
  std::vector<RegisterOp> failing_ops;
};

// Values written must be unique per key and non-zero (zero stands for "no value"); every register
// starts absent.
LinearizabilityResult CheckRegisters(const std::vector<RegisterOp>& history);

// One key's history, unpruned, as the search sees it (exposed for tests and shrinking).
bool IsLinearizable(const std::vector<RegisterOp>& ops, size_t* configurations = nullptr);

std::string Describe(const RegisterOp& op);

}  // namespace leasehold::faults
