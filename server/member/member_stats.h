// The member's gauges for /metrics, read from its parts.
#pragma once

#include "server/member/member.h"
#include "server/observability/metrics.h"
#include "server/watch/watch_hub.h"

namespace leasehold::server {

// `watch_hub` may be null (no watch figures).
MemberStats StatsOf(Member& member, const WatchHub* watch_hub);

}  // namespace leasehold::server
