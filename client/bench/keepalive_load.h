// Keep-alive load: one bidirectional LeaseKeepAlive stream per client, each keeping its leases
// renewed as fast as the server answers (every lease has one request in flight at a time).
#pragma once

#include <vector>

#include "client/bench/connections.h"
#include "client/bench/load.h"
#include "client/bench/options.h"

namespace leasehold::bench {

// `leases` holds clients * leases_per_stream ids; stream i renews its consecutive slice. A response
// with TTL <= 0 counts as a NOT_FOUND error.
LoadResult RunKeepAliveLoad(const Options& options, Connections& connections,
                            const std::vector<int64_t>& leases);

}  // namespace leasehold::bench
