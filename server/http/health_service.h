// /metrics and /health over HTTP, as etcd serves them on --listen-metrics-urls:
//  - GET /metrics: the Prometheus text exposition (metrics.h);
//  - GET /health: 200 {"health":"true"} when no alarm is raised, the member knows a leader and a
//    linearizable read barrier completes (it fails within the request timeout otherwise); else
//    503 {"health":"false"};
//  - GET /livez and /readyz, etcd 3.5's probes: live while a serializable read works; ready while
//    no CORRUPT alarm is raised and a serializable and a linearizable read work. "ok", or 503 and
//    the checks that failed; ?verbose lists every check, ?exclude=NAME skips one.
// Anything else is 404.
#pragma once

#include <string_view>

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
  // /livez (`ready` false) or /readyz, with the URL's query.
  void ServeProbe(bool ready, std::string_view query, HttpServer::Respond respond);

 private:
  Member* const member_;
  const WatchHub* const watch_hub_;
};

}  // namespace leasehold::server
