// etcd's TLS flags, checked and applied to the parsed flags before anything listens.
#pragma once

#include "absl/status/status.h"
#include "server/command/flags.h"

namespace leasehold::server {

// etcd's handling of the two flags, before anything listens: for each one set, a port given no
// certificate and key gets a self-signed pair in <data-dir>/fixtures/client or .../peer for the
// hosts of its listen URLs; a port given them keeps them, with etcd's warning.
[[nodiscard]] absl::Status ApplyAutoTls(Flags* flags);

// etcd's checks on the certificate rules of both ports (logging those that have no effect without
// client certificate auth), and --cipher-suites: Go's suite names become the OpenSSL list of both
// ports and of gRPC (through GRPC_SSL_CIPHER_SUITES, read when gRPC makes its first TLS context).
// InvalidArgument with etcd's words for what etcd refuses.
[[nodiscard]] absl::Status CheckTlsFlags(Flags* flags);

}  // namespace leasehold::server
