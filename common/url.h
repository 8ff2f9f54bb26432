// Client and peer URLs as etcd's flags give them.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace leasehold {

// "http://127.0.0.1:2379" -> "127.0.0.1:2379". InvalidArgument for other schemes or no port.
[[nodiscard]] absl::StatusOr<std::string> HostPortOfUrl(const std::string& url);

// Whether `url` names a Unix domain socket, as etcd's unix:// and unixs:// (with TLS) URLs do.
bool IsUnixUrl(const std::string& url);

// gRPC's address for a client or peer URL: "host:port" for http:// and https://, and for unix://
// and unixs:// "unix:" and what follows the scheme, as etcd takes it: unix://localhost:2379 is the
// socket file "localhost:2379" in the working directory (etcd takes only that host:port form; a
// path, unix:///run/etcd.sock, is accepted here too).
[[nodiscard]] absl::StatusOr<std::string> GrpcAddressOfUrl(const std::string& url);

}  // namespace leasehold
