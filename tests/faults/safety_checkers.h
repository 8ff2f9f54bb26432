// Checkers for what a campaign recorded (besides linearizability): lease safety and liveness,
// fenced-register safety, acknowledged writes kept. Each returns its anomalies as sentences;
// none means the property held.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tests/faults/history.h"

namespace leasehold::faults {

struct LeaseCheck {
  std::vector<std::string> anomalies;
  int64_t leases = 0;
  int64_t observations = 0;
  int64_t revocations_checked = 0;  // revoked or abandoned leases whose disappearance was checked
};

// - Early revocation: a read that returned before send + TTL of an acknowledged renewal (or of the
//   grant), and before the client itself sent a revoke, found the lease's key gone.
// - Key outliving revocation: a read invoked after a revoke was acknowledged, or after a
//   keep-alive reported the lease gone, still found the key.
// - Liveness: for a lease abandoned by its client, a read invoked after
//   send + TTL + `expiry_bound_ns` of its last renewal still found the key. Fault windows delay
//   the bound: a window open at any time up to the deadline moves it to the window's end +
//   `election_ns` + TTL + `expiry_bound_ns` (a new leader restarts every lease's TTL).
LeaseCheck CheckLeases(const std::vector<LeaseLife>& leases,
                       const std::vector<LeaseObservation>& observations,
                       const std::vector<FaultWindow>& faults, int64_t election_ns,
                       int64_t expiry_bound_ns);

struct FenceCheck {
  std::vector<std::string> anomalies;
  int64_t accepted = 0;       // writes in the store's log
  int64_t holders = 0;        // distinct tokens that wrote
  int64_t stale_refused = 0;  // writes after a pause that the register refused
};

// - Tokens of accepted writes never decrease in revision order (no write with a token lower than
//   one already written was accepted).
// - Each token's writes are one contiguous run from one client (critical sections never overlap
//   on the register).
// - Every write a client saw accepted is in the store's log (no acknowledged write lost), and no
//   write a client saw refused is.
// - No write (a client's sequence number) is in the log twice: a call is applied at most once.
FenceCheck CheckFencedRegister(const std::vector<FencedWrite>& writes,
                               const std::vector<AcceptedWrite>& log);

// Two events are the same: revision, key, kind, value, versions and prev_kv.
bool SameEvent(const WatchedEvent& a, const WatchedEvent& b);

struct WatchCheck {
  std::vector<std::string> anomalies;
  int64_t history_events = 0;  // in the history read at the end
  int64_t events = 0;          // received by the watchers
  int64_t progress = 0;        // progress notifications they received
  int64_t streams = 0;         // streams they opened (resumes included)
};

// `history`: every event from the first revision, as a watch read it at the end; `final_state`:
// every key's value at the history's last revision, as a read found it.
// - The history agrees with itself: revisions never decrease; each event's prev_kv is the key's
//   previous version in it (none for a key being created); a put's version counts up from 1 under
//   one create_revision; only an existing key is deleted.
// - It is complete: played from an empty store it leaves exactly `final_state` (a lease's expiry
//   without its DELETE events would leave keys the store no longer has).
// - Each watcher received the history (the part its filter selects) from its start revision, in
//   order, up to where it stopped:
//   no gap, no duplicate, nothing reordered, the same keys, values, versions and prev_kv; the
//   events of one revision in one response (atomic).
// - A progress notification at revision r came after every event at or below r (never ahead).
WatchCheck CheckWatches(const std::vector<WatchLog>& logs, const std::vector<WatchedEvent>& history,
                        const std::map<std::string, std::string>& final_state);

struct BlobCheck {
  std::vector<std::string> anomalies;
  int64_t holdings = 0;
  int64_t writes_accepted = 0;
  int64_t stale_refused = 0;
};

// - No two clients' holdings overlap.
// - No write with a lease id is accepted once another client's acquire was acknowledged after that
//   lease's own acquire (a stale lease id is refused).
BlobCheck CheckBlobLeases(const std::vector<BlobHolding>& holdings,
                          const std::vector<BlobWrite>& writes);

// Keys a client saw acknowledged that are missing from `present` (a read invoked after them).
std::vector<std::string> MissingAcknowledged(
    const std::vector<std::pair<std::string, int64_t>>& acked,
    const std::vector<std::string>& present, int64_t read_call_ns, const std::string& where);

}  // namespace leasehold::faults
