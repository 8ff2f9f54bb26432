// absl::Status -> grpc::Status. The codes share numbering; etcd's message text is kept verbatim
// because clients match on it.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace leasehold::server {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace leasehold::server
