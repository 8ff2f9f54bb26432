// etcd's --cipher-suites: TLS cipher suites named as Go names them (crypto/tls, the IANA names plus
// two older aliases), turned into the OpenSSL cipher list that gRPC and the HTTP ports are given.
// As in Go (and so etcd), the list restricts TLS 1.2 only: TLS 1.3's suites are not configurable,
// and naming one is accepted with no effect.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leasehold::server {

// The OpenSSL cipher list ("A:B:...") for `go_names`, in their order. InvalidArgument with etcd's
// `unexpected TLS cipher suite "NAME"` for a name Go does not know, or when none of them is one
// this OpenSSL offers for TLS 1.2 (RC4, say).
[[nodiscard]] absl::StatusOr<std::string> OpenSslCipherList(
    const std::vector<std::string>& go_names);

// etcd's client port speaks HTTP/2 over TLS, whose rules (RFC 7540 9.2.2, as Go's http2 applies
// them) want an ECDHE AES-128-GCM suite among those allowed: etcd stops with this error otherwise.
[[nodiscard]] absl::Status CheckHttp2CipherSuites(const std::vector<std::string>& go_names);

}  // namespace leasehold::server
