// The campaign's last check: MVCC compaction on the members as the faults left them. It compacts
// the store at a revision C in the middle of the history read at the end, then asks every member:
// - a range at C - 1 is refused as etcd refuses it (OutOfRange, "etcdserver: mvcc: required
//   revision has been compacted");
// - a range at C returns exactly the keys and values the history leaves at C;
// - a watch from C - 1 is cancelled with compact_revision C, as etcd reports it;
// - a watch from C + 1 (with prev_kv) delivers the history from there, event for event.
// Not checked: prev_kv of the events at C itself (etcd leaves it out, its previous version being
// compacted).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/faults/history.h"

namespace leasehold::faults {

struct CompactionCheck {
  int64_t revision = 0;  // C; 0 when the history was too short to compact in
  int members = 0;       // members that answered every check
  std::vector<std::string> anomalies;
};

// `endpoints`: every member's client address; `history`: every event from the first revision.
CompactionCheck CheckCompaction(const std::vector<std::string>& endpoints,
                                const std::vector<WatchedEvent>& history);

}  // namespace leasehold::faults
