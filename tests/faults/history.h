// What a campaign records besides register operations: lease and lock events, fault windows and
// latency samples, each with times on the driver's steady clock (ns since the campaign started).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace leasehold::faults {

// One lease's life as its client saw it.
struct LeaseLife {
  int64_t id = 0;
  int64_t ttl_s = 0;
  int64_t granted_sent_ns = 0;  // the grant's send time; the grant counts as the first renewal
  int64_t put_acked_ns = -1;    // when the attached key's put was acknowledged (-1: never)
  // Acknowledged keep-alives: (send time, TTL granted). The lease is promised alive until
  // send + TTL.
  std::vector<std::pair<int64_t, int64_t>> renewals;
  int64_t gone_seen_ns = -1;     // a keep-alive answered TTL 0 (lease gone), at this return time
  int64_t revoke_sent_ns = -1;   // explicit revoke sent (from then on the key may go at any time)
  int64_t revoke_acked_ns = -1;  // explicit revoke acknowledged
  int64_t abandoned_ns = -1;     // the client stopped renewing (not revoked) at this time
};

// A read of which leases' keys exist.
struct LeaseObservation {
  int64_t call_ns = 0;
  int64_t return_ns = 0;
  std::vector<int64_t> present;  // lease ids whose key was there (sorted)
};

// A write to the fenced register, as its client saw it.
struct FencedWrite {
  int client = 0;
  int64_t token = 0;
  int64_t seq = 0;
  int64_t call_ns = 0;
  int64_t return_ns = 0;
  enum class Outcome { kAccepted, kRefused, kUnknown } outcome = Outcome::kUnknown;
  bool after_pause = false;  // issued after the holder stalled past its lease's TTL
};

// The register's accepted writes as the store has them, in revision order.
struct AcceptedWrite {
  int64_t revision = 0;
  int64_t token = 0;
  int client = 0;
  int64_t seq = 0;
};

// A stretch of time during which a client believed it held a blob lease: from the acquire's
// acknowledgement to the earliest of (last acknowledged acquire/renew's send + duration, the
// release's send, a refusal telling it the lease was gone).
struct BlobHolding {
  int client = 0;
  std::string lease_id;
  int64_t acquired_ns = 0;  // acknowledgement of the acquire
  int64_t believed_until_ns = 0;
};

struct BlobWrite {
  int client = 0;
  std::string lease_id;
  int64_t call_ns = 0;
  int64_t return_ns = 0;
  int status = 0;      // HTTP status; 0: no answer
  bool stale = false;  // sent after the client's own lease had run out
};

// A watch event as a watcher received it (with its prev_kv, when the server sent one).
struct WatchedEvent {
  int64_t revision = 0;  // the kv's mod_revision
  std::string key;
  bool put = true;  // or a delete
  std::string value;
  int64_t create_revision = 0;
  int64_t version = 0;
  bool has_prev = false;
  std::string prev_value;
  int64_t prev_mod_revision = 0;
};

// What a watcher asks for: the keys under `prefix` (empty: every key), without puts or without
// deletes when asked (etcd's NOPUT / NODELETE filters), with prev_kv or without.
struct WatchFilter {
  std::string prefix;
  bool no_put = false;
  bool no_delete = false;
  bool prev_kv = true;
  bool Matches(const WatchedEvent& e) const {
    return e.key.compare(0, prefix.size(), prefix) == 0 && !(e.put ? no_put : no_delete);
  }
  // `e` as this watcher must receive it.
  WatchedEvent Shown(WatchedEvent e) const {
    if (!prev_kv) {
      e.has_prev = false;
      e.prev_value.clear();
      e.prev_mod_revision = 0;
    }
    return e;
  }
};

// What one watcher received, across the streams it resumed on (each resumed at the
// revision after the last event or progress notification it had), in the order received.
struct WatchLog {
  int watcher = 0;
  int64_t start_revision = 1;
  WatchFilter filter;
  struct Item {
    bool progress = false;  // a progress notification at `progress_revision`, else `event`
    int64_t progress_revision = 0;
    WatchedEvent event;
    int64_t response = 0;  // which response of the watcher's brought it (they count from 1)
  };
  std::vector<Item> items;
  int streams = 0;  // streams opened (a resume after a member failed or lost its leader)
};

struct FaultWindow {
  std::string kind;     // kill, pause, partition, loss, ...
  std::string targets;  // human-readable: which members, which cut
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // healed
};

struct LatencySample {
  int64_t at_ns = 0;
  int64_t latency_ns = 0;
  std::string kind;  // read, write, cas, lease, lock, ...
  bool ok = true;
};

}  // namespace leasehold::faults
