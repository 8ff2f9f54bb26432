// etcdctl's `lease keep-alive --once` for test clients: one renewal on a fresh stream.
#pragma once

#include <cstdint>

#include "etcdserverpb/rpc.grpc.pb.h"

namespace leasehold::testing {

// Renews lease `id` once through `stub`, waiting at most `deadline_seconds` (and, with
// `wait_for_ready`, for the channel to connect within that time). Returns the TTL granted, 0 when
// the lease is gone, -1 when no answer came.
int64_t KeepAliveOnce(etcdserverpb::Lease::Stub* stub, int64_t id, double deadline_seconds,
                      bool wait_for_ready);

}  // namespace leasehold::testing
