// etcd's check of a peer's client certificate against the address it connects from, made on the
// peer port when peers must present certificates (--peer-client-cert-auth) unless
// --experimental-peer-skip-client-san-verification is set. As etcd's: a certificate with IP
// subject alternative names must name the address; one without, but with DNS names, must have a
// name that resolves to it; one with neither passes. So a certificate copied to another machine
// cannot stand in for a member.
//
// etcd closes such a connection after the handshake; gRPC gives no hook there, so every call on
// the peer port is checked before it does anything, and refused with PermissionDenied. Outcomes are
// kept per connection (its address and certificate), so DNS is asked once per connection.
//
// Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <openssl/types.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace grpc {
class ServerContextBase;
}

namespace leasehold::server {

// The IP address in gRPC's name of a peer ("ipv4:10.0.0.1:2380", "ipv6:[::1]:2380", the brackets
// possibly %-encoded), or empty when it holds none (a Unix socket).
std::string IpOfGrpcPeer(const std::string& peer);

// The rule itself, for certificate `cert` and address `ip`; `resolve` gives a DNS name's addresses.
// PermissionDenied with etcd's reason ("x509: certificate is valid for 10.0.0.2, not 10.0.0.1",
// "tls: \"10.0.0.1\" does not match any of DNSNames [\"a.example\"]").
absl::Status CheckCertificateAddress(X509* cert, const std::string& ip,
                                     const std::function<std::vector<std::string>(const std::string&)>& resolve);

class PeerAddressCheck {
 public:
  explicit PeerAddressCheck(bool enabled) : enabled_(enabled) {}

  // OK when the check is off, when the call came with no verified certificate, or when the
  // certificate fits the caller's address; otherwise PermissionDenied (logged as etcd logs a
  // rejected connection, once per connection).
  absl::Status Check(const grpc::ServerContextBase& context);

 private:
  const bool enabled_;
  absl::Mutex mu_;
  // By peer address and certificate; cleared when it grows past a bound (connections come and go).
  std::map<std::string, absl::Status> outcomes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasehold::server
