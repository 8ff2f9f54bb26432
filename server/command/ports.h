// The member's ports, each set up from etcd's flags: the peer port's gRPC services, the client
// port's gRPC settings, and the HTTP listeners (on the client URLs, the blob adapter's URL and the
// metrics URLs). main.cc composes them with the member.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/api/cluster_service.h"
#include "server/api/peer_service.h"
#include "server/blob/blob_service.h"
#include "server/command/flags.h"
#include "server/corruption/initial_corrupt_check.h"
#include "server/http/health_service.h"
#include "server/http/http_server.h"
#include "server/http/json_gateway.h"
#include "server/member/member.h"
#include "server/member/node_loop.h"
#include "server/peer/peer_tls_listener.h"

namespace leasehold::server {

// The peer port (--listen-peer-urls): Raft messages and the calls followers forward (PeerService),
// the member list joining members ask for, and HashKV for the corruption checks. https:// and
// unixs:// peer URLs are served through this process's own TLS (peer_tls_listener.h).
class PeerPort {
 public:
  // Nothing is owned; all must outlive this object.
  PeerPort(Member* member, NodeLoop* node);
  // Binds the peer URLs; Unavailable when they cannot be bound.
  [[nodiscard]] absl::Status Start(const Flags& flags);
  void Stop();

 private:
  PeerService peer_;
  ClusterService cluster_;
  PeerHashKvService hash_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<PeerTlsListener> tls_listener_;  // with https:// or unixs:// peer URLs
};

// The client port's gRPC server: etcd's message limits, keepalive policy, stream limit and
// interceptors, and no deadline answers of gRPC's own. With https:// client URLs it also listens,
// with TLS, on an abstract Unix socket to which the HTTP listeners relay gRPC clients; its name
// goes to *grpc_tls_socket (empty without).
[[nodiscard]] absl::Status ConfigureClientGrpc(const Flags& flags, grpc::ServerBuilder& builder,
                                               std::string* grpc_tls_socket);

// HTTP/1.1 on every client URL: the JSON gateway, /health, /metrics and /version; gRPC connections
// are handed to `grpc_server` (plain URLs) or relayed to `grpc_tls_socket` (https:// URLs). None of
// the pointers is owned.
[[nodiscard]] absl::StatusOr<std::vector<std::unique_ptr<HttpServer>>> StartClientHttp(
    const Flags& flags, grpc::Server* grpc_server, const std::string& grpc_tls_socket,
    JsonGateway* gateway, HealthService* health, const std::string& version);

// The Azure Blob lease adapter on --listen-blob-urls: both null when the flag is empty, or when the
// default URL is taken (logged; a URL given explicitly must be had).
struct BlobAdapter {
  std::unique_ptr<BlobService> service;
  std::unique_ptr<HttpServer> server;
};
[[nodiscard]] absl::StatusOr<BlobAdapter> StartBlobAdapter(const Flags& flags, Member* member);

// etcd's --listen-metrics-urls: /metrics and /health (null when the flag is empty).
[[nodiscard]] absl::StatusOr<std::unique_ptr<HttpServer>> StartMetricsListener(
    const Flags& flags, HealthService* health);

// Removes the socket files of the unix:// and unixs:// client and peer URLs, once their servers
// have stopped, as etcd removes them.
void RemoveUnixSockets(const Flags& flags);

}  // namespace leasehold::server
