// absl::Status -> grpc::Status. The codes share numbering; etcd's message text is kept verbatim
// because clients match on it.
#pragma once

#include <grpcpp/support/server_callback.h>
#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace leasehold::server {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

// etcd's Lock and Election servers run etcd's recipes on an embedded client: the errors they pass
// on (a missing lease, an empty key, "no leader"...) reach the caller as plain errors, which gRPC
// sends with code UNKNOWN and the error's text.
inline grpc::Status EmbeddedClientError(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::UNKNOWN, std::string(status.message()));
}

// A server-streaming call refused before it starts: finishes at once with `status`.
template <typename Message>
class RefusedWriteReactor final : public grpc::ServerWriteReactor<Message> {
 public:
  explicit RefusedWriteReactor(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

// The same for a bidirectional stream: nothing is read.
template <typename Request, typename Response>
class RefusedBidiReactor final : public grpc::ServerBidiReactor<Request, Response> {
 public:
  explicit RefusedBidiReactor(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace leasehold::server
