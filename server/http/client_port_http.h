// HTTP/1.1 on a client URL, as etcd answers it there: the JSON gateway, /health, /metrics and
// /version, behind etcd's access controller (--cors on every answer, and on a plain http:// URL the
// --host-whitelist check against DNS rebinding).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/http/health_service.h"
#include "server/http/http_server.h"
#include "server/http/json_gateway.h"

namespace leasehold::server {

struct ClientPortHttp {
  JsonGateway* gateway;  // null: no gateway (etcd's --enable-grpc-gateway=false)
  HealthService* health;
  std::string version;  // etcd's server version, as /version states it
  // etcd's --cors: origins whose pages may read the answers; empty or "*": all.
  std::vector<std::string> cors;
  // etcd's --host-whitelist, checked on plain http:// URLs only (over TLS any host is fine, as
  // etcd's): the Host a request names, without its port, must be one of these; empty or "*": any.
  std::vector<std::string> host_whitelist;
  bool tls = false;

  // Answers `request`, exactly once.
  void Serve(HttpRequest&& request, HttpServer::Respond respond) const;
};

// The host a Host header names, as Go's net.SplitHostPort leaves it ("h:80" and "[::1]:80" lose
// their ports; anything that is not host:port stays whole).
std::string_view HostOfHeader(std::string_view host_header);

// Whether `host` passes etcd's --host-whitelist `whitelist` (exact names; empty or "*" allows all).
bool HostWhitelisted(const std::vector<std::string>& whitelist, std::string_view host);

}  // namespace leasehold::server
