// The watch requests the campaign sends and the events it records, shared by the watch workload
// and the compaction check.
#pragma once

#include <cstdint>

#include "etcdserverpb/rpc.pb.h"
#include "tests/faults/history.h"

namespace leasehold::faults {

// A watch as `filter` says, from `start_revision`.
etcdserverpb::WatchRequest FilteredWatch(const WatchFilter& filter, int64_t start_revision);
// A watch of every key from `start_revision`, with prev_kv.
etcdserverpb::WatchRequest WatchEverything(int64_t start_revision);
etcdserverpb::WatchRequest ProgressRequest();
WatchedEvent ToWatchedEvent(const mvccpb::Event& e);

}  // namespace leasehold::faults
