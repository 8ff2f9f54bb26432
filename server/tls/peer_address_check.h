// etcd's check of a peer's client certificate against the address it connects from, made on the
// peer port when peers must present certificates (--peer-client-cert-auth) unless
// --experimental-peer-skip-client-san-verification is set: a certificate that names IP addresses
// (subject alternative names) must name the one the peer connects from, so a certificate copied to
// another machine cannot stand in for a member. The peer port's listener makes it right after the
// handshake, as etcd does (peer_tls_listener.h).
//
// Only that half of etcd's check is made. etcd also lets in a certificate whose IPs do not match
// but one of whose DNS names resolves to the address (by reverse and forward lookups); here a
// certificate with DNS names passes whatever its IPs, as does one with no names: DNS lookups would
// block the listener, and a failed one would lock a member out.
#pragma once

#include <string>

#include <openssl/types.h>

#include "absl/status/status.h"

namespace leasehold::server {

// The rule for certificate `cert` and address `ip`: PermissionDenied with Go's reason
// ("x509: certificate is valid for 10.0.0.2, not 10.0.0.1") when the certificate names IP
// addresses, none of them `ip`, and no DNS name; also for a malformed IP name.
[[nodiscard]] absl::Status CheckCertificateAddress(X509* cert, const std::string& ip);

}  // namespace leasehold::server
