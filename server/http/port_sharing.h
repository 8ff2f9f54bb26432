// One listening port shared by gRPC and HTTP/1.1, as etcd shares its client port: each new
// connection's first bytes are read without consuming them to tell where it goes. On a plain port,
// HTTP/2's preface (a gRPC client) is handed over as a descriptor; on an https:// port, a
// ClientHello offering HTTP/2 alone (as gRPC clients' do) is relayed byte for byte, still
// encrypted, to gRPC's own TLS listener. Every other connection is served as HTTP/1.1.
#pragma once

#include <functional>
#include <string>

#include "boost/asio/ip/tcp.hpp"

namespace leasehold::server {

struct SharedPortRoutes {
  // Plain port: takes over a gRPC connection's descriptor.
  std::function<void(int fd)> divert_http2;
  // https:// port: the abstract Unix socket name of gRPC's TLS listener.
  std::string relay_grpc_tls_to;
  // Serves any other connection as HTTP/1.1 (over TLS on an https:// port).
  std::function<void(boost::asio::ip::tcp::socket)> serve;
};

// Tells where `socket`, accepted on a shared port (`tls`: an https:// one), goes and hands it on,
// on the socket's executor. A connection silent for too long is closed. `routes` must outlive
// every connection routed.
void RouteSharedConnection(boost::asio::ip::tcp::socket socket, bool tls,
                           const SharedPortRoutes& routes);

}  // namespace leasehold::server
