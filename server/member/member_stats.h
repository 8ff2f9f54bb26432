// The member's gauges for /metrics, read from its parts.
#pragma once

#include "server/member/member.h"
#include "server/observability/metrics.h"

namespace leasehold::server {

MemberStats StatsOf(Member& member);

}  // namespace leasehold::server
