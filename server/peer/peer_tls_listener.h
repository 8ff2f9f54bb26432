// The peer port's TLS listeners (https:// and unixs:// peer URLs). The TLS is this process's own,
// not gRPC's, so that etcd's checks happen where etcd makes them and the other side learns what
// etcd's would: a member's certificate meets etcd's rules inside the handshake (a refusal is
// answered with a bad_certificate alert), then, unless --experimental-peer-skip-client-san-
// verification, the address it connects from (peer_address_check.h); every refused or failed
// handshake is logged as etcd logs it ("rejected connection", with Go's words for why: "remote
// error: tls: bad certificate" when the other side refused ours). A connection that passes is
// handed, decrypted, to the peer port's gRPC server through a socket pair.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/tls/tls_files.h"

namespace leasehold::server {

class PeerTlsListener {
 public:
  // `hand_over` takes ownership of a connected descriptor carrying the connection's plaintext
  // (grpc::AddInsecureChannelFromFd), on a listener thread.
  PeerTlsListener(TlsFiles files, std::function<void(int fd)> hand_over);
  ~PeerTlsListener();

  // Listens on every one of `urls`. InvalidArgument for unusable files or a malformed URL,
  // Unavailable when an address cannot be bound.
  [[nodiscard]] absl::Status Start(const std::vector<std::string>& urls);
  // Stops accepting, closes every connection and joins the threads.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::server
