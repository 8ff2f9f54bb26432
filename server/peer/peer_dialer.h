// Dialling other members' peer ports. A plain URL (http://, unix://) gets a plain gRPC channel. For
// https:// and unixs:// URLs the TLS is this process's own, not gRPC's, as on the listening side
// (peer_tls_listener.h): the channel connects to a local abstract Unix socket, one per URL, and
// each connection made there is carried over TLS to the peer, so the server's certificate meets
// etcd's checks inside the handshake (the trusted CA, the host name dialled, and
// --peer-cert-allowed-cn/-hostname, which etcd's dialer applies too) and a refusal reaches the
// peer as a bad_certificate alert, which its log shows as etcd's does. gRPC keeps its own
// reconnection and backoff: each of its attempts is one TLS connection.
//
// Failed TLS connections are logged when a URL's failures begin or their reason changes, not at
// every retry. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/support/channel_arguments.h>

#include "absl/status/statusor.h"
#include "server/tls/tls_files.h"

namespace leasehold::server {

// A channel to the peer port at `url` with `files` (--peer-*) and the channel arguments `args`.
// InvalidArgument for a malformed URL or unusable files.
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::Channel>> DialPeer(
    const std::string& url, const TlsFiles& files,
    const grpc::ChannelArguments& args = grpc::ChannelArguments());

}  // namespace leasehold::server
