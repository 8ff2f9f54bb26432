// Where a peer URL points, as a socket address for Asio: https://host:port (and http://) on TCP,
// unixs://path (and unix://) a Unix domain socket, with etcd's reading of both (common/url.h).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "boost/asio/generic/stream_protocol.hpp"

namespace leasehold::server {

using PeerEndpoint = boost::asio::generic::stream_protocol::endpoint;

// The address of `url`. A host name is resolved (blocking; "localhost" is 127.0.0.1).
// InvalidArgument for a malformed URL or a name that does not resolve.
[[nodiscard]] absl::StatusOr<PeerEndpoint> PeerEndpointOfUrl(const std::string& url);

// The host part of a TCP URL ("10.0.0.1", "::1", "node1.example"), or empty for a Unix socket.
std::string HostOfPeerUrl(const std::string& url);

// Sends small writes at once on a TCP socket (Nagle's delay, against the receiver's delayed
// acknowledgement, would hold a Raft message up to 40 ms, as gRPC knows when it sets it on its
// own sockets); nothing on a Unix socket.
void SendWithoutDelay(boost::asio::generic::stream_protocol::socket& socket);

// The IP address of a TCP endpoint ("10.0.0.1", "::1"), or empty for a Unix socket.
std::string IpOfEndpoint(const PeerEndpoint& endpoint);

// An endpoint as Go writes a connection's address in etcd's logs: "10.0.0.1:2380", "[::1]:2380",
// or a Unix socket's path.
std::string DescribeEndpoint(const PeerEndpoint& endpoint);

}  // namespace leasehold::server
