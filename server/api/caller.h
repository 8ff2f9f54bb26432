// Who a gRPC call comes from, under etcd's v3 auth: the user its token names.
#pragma once

#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "server/member/member.h"

namespace leasehold::server {

// The call's auth token: etcd clients send it as "token" metadata; etcd's JSON gateway passes the
// HTTP Authorization header on as "authorization". Empty when there is none.
std::string AuthTokenOf(const grpc::ServerContextBase& context);

// The common name of the client's verified TLS certificate; empty without one.
std::string CertUserOf(const grpc::ServerContextBase& context);

// Member::AuthenticatedUser for the call's token and certificate.
[[nodiscard]] absl::StatusOr<std::string> CallerOf(Member& member,
                                                   const grpc::ServerContextBase& context);

// OK when auth is disabled or the call's user holds the root role (etcd's admin-only calls:
// maintenance, membership changes); the token's or AuthTable::CheckAdmin's error otherwise.
[[nodiscard]] absl::Status CheckCallerIsAdmin(Member& member,
                                              const grpc::ServerContextBase& context);
// The same, with the errors etcd's Maintenance service gives: its auth package's own, unconverted
// (code Unknown, "auth: permission denied", "auth: user name is empty", "auth: invalid auth
// token").
[[nodiscard]] absl::Status CheckMaintenanceCaller(Member& member,
                                                  const grpc::ServerContextBase& context);

}  // namespace leasehold::server
