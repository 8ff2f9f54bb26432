// /metrics and /health over HTTP, as etcd serves them on --listen-metrics-urls:
//  - GET /metrics: the Prometheus text exposition (metrics.h);
//  - GET /health: 200 {"health":"true"} when no alarm is raised, the member knows a leader and a
//    linearizable read barrier completes (it fails within the request timeout otherwise); else
//    503 {"health":"false"}.
// Anything else is 404.
#pragma once

#include "server/http/http_server.h"
#include "server/member/member.h"
#include "server/watch/watch_hub.h"

namespace leasehold::server {

class HealthService {
 public:
  // `watch_hub` (may be null) gives /metrics its watch figures.
  HealthService(Member* member, const WatchHub* watch_hub)
      : member_(member), watch_hub_(watch_hub) {}
  void Handle(HttpRequest&& request, HttpServer::Respond respond);

 private:
  Member* const member_;
  const WatchHub* const watch_hub_;
};

}  // namespace leasehold::server
