// etcd's check of a peer's client certificate against the address it connects from, made on the
// peer port when peers must present certificates (--peer-client-cert-auth) unless
// --experimental-peer-skip-client-san-verification is set: a certificate that names IP addresses
// (subject alternative names) must name the one the peer connects from, so a certificate copied to
// another machine cannot stand in for a member.
//
// Only that half of etcd's check is made. etcd also lets in a certificate whose IPs do not match
// but one of whose DNS names resolves to the address (by reverse and forward lookups); here a
// certificate with DNS names passes whatever its IPs, as does one with no names: DNS lookups would
// block gRPC's threads, and a failed one would lock a member out.
//
// etcd closes such a connection after the handshake; gRPC gives no hook there, so every call on
// the peer port is checked before it does anything, and refused with PermissionDenied. Outcomes
// depend only on the address and the certificate, so they are kept per connection.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

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

// The rule itself, for certificate `cert` and address `ip`: PermissionDenied with Go's reason
// ("x509: certificate is valid for 10.0.0.2, not 10.0.0.1") when the certificate names IP
// addresses, none of them `ip`, and no DNS name; also for a malformed IP name.
[[nodiscard]] absl::Status CheckCertificateAddress(X509* cert, const std::string& ip);

class PeerAddressCheck {
 public:
  explicit PeerAddressCheck(bool enabled) : enabled_(enabled) {}

  // OK when the check is off, when the call came with no verified certificate, or when the
  // certificate fits the caller's address; otherwise PermissionDenied (logged as etcd logs a
  // rejected connection, once per connection).
  [[nodiscard]] absl::Status Check(const grpc::ServerContextBase& context);

 private:
  const bool enabled_;
  absl::Mutex mu_;
  // By gRPC peer name (one per connection) and a hash of the certificate; cleared when it grows
  // past a bound (connections come and go).
  std::map<std::pair<std::string, uint64_t>, absl::Status> outcomes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasehold::server
