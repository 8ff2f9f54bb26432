// etcd's --auto-tls and --peer-auto-tls, applied to the parsed flags.
#pragma once

#include "absl/status/status.h"
#include "server/command/flags.h"

namespace leasehold::server {

// etcd's handling of the two flags, before anything listens: for each one set, a port given no
// certificate and key gets a self-signed pair in <data-dir>/fixtures/client or .../peer for the
// hosts of its listen URLs; a port given them keeps them, with etcd's warning.
[[nodiscard]] absl::Status ApplyAutoTls(Flags* flags);

}  // namespace leasehold::server
