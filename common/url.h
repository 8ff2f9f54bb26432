// Client and peer URLs as etcd's flags give them.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace leasehold {

// "http://127.0.0.1:2379" -> "127.0.0.1:2379". InvalidArgument for other schemes or no port.
[[nodiscard]] absl::StatusOr<std::string> HostPortOfUrl(const std::string& url);

}  // namespace leasehold
