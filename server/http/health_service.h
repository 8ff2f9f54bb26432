// /metrics and /health over HTTP, as etcd serves them on --listen-metrics-urls:
//  - GET /metrics: the Prometheus text exposition (metrics.h);
//  - GET /health: 200 {"health":"true"} when no alarm is raised, the member knows a leader and a
//    linearizable read barrier completes (it fails within the request timeout otherwise); else
//    503 {"health":"false"}.
// Anything else is 404.
#pragma once

#include "server/http/http_server.h"
#include "server/member/member.h"

namespace leasehold::server {

class HealthService {
 public:
  explicit HealthService(Member* member) : member_(member) {}
  void Handle(HttpRequest&& request, HttpServer::Respond respond);

 private:
  Member* const member_;
};

}  // namespace leasehold::server
