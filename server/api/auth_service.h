// etcdserverpb.Auth: etcd's v3 auth management and Authenticate. Changes go through the log (see
// storage/auth/auth_table.h); while auth is enabled they need the root role, checked when applied.
// Passwords are hashed (bcrypt) before they are proposed, so the log and the store never hold one.
//
// Authenticate checks the password here, against the applied state, then proposes the grant; once
// applied, every member knows the new simple token (TokenStore). A wrong password (or an unknown
// user, indistinguishably) is answered only after a delay, so guessing is slow. Hashing and
// checking run on BlockingCalls threads, never on gRPC's.
#pragma once

#include <mutex>
#include <string>

#include "absl/time/time.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/api/blocking_calls.h"
#include "server/member/member.h"

namespace leasehold::server {

class AuthService final : public etcdserverpb::Auth::CallbackService {
 public:
  // `calls` runs the hashing; give it its own small budget, so password guessing cannot starve
  // Lock and Election.
  AuthService(Member* member, BlockingCalls* calls, absl::Duration failure_delay);

  grpc::ServerUnaryReactor* AuthEnable(grpc::CallbackServerContext* context,
                                       const etcdserverpb::AuthEnableRequest* request,
                                       etcdserverpb::AuthEnableResponse* response) override;
  grpc::ServerUnaryReactor* AuthDisable(grpc::CallbackServerContext* context,
                                        const etcdserverpb::AuthDisableRequest* request,
                                        etcdserverpb::AuthDisableResponse* response) override;
  grpc::ServerUnaryReactor* AuthStatus(grpc::CallbackServerContext* context,
                                       const etcdserverpb::AuthStatusRequest* request,
                                       etcdserverpb::AuthStatusResponse* response) override;
  grpc::ServerUnaryReactor* Authenticate(grpc::CallbackServerContext* context,
                                         const etcdserverpb::AuthenticateRequest* request,
                                         etcdserverpb::AuthenticateResponse* response) override;
  grpc::ServerUnaryReactor* UserAdd(grpc::CallbackServerContext* context,
                                    const etcdserverpb::AuthUserAddRequest* request,
                                    etcdserverpb::AuthUserAddResponse* response) override;
  grpc::ServerUnaryReactor* UserGet(grpc::CallbackServerContext* context,
                                    const etcdserverpb::AuthUserGetRequest* request,
                                    etcdserverpb::AuthUserGetResponse* response) override;
  grpc::ServerUnaryReactor* UserList(grpc::CallbackServerContext* context,
                                     const etcdserverpb::AuthUserListRequest* request,
                                     etcdserverpb::AuthUserListResponse* response) override;
  grpc::ServerUnaryReactor* UserDelete(grpc::CallbackServerContext* context,
                                       const etcdserverpb::AuthUserDeleteRequest* request,
                                       etcdserverpb::AuthUserDeleteResponse* response) override;
  grpc::ServerUnaryReactor* UserChangePassword(
      grpc::CallbackServerContext* context,
      const etcdserverpb::AuthUserChangePasswordRequest* request,
      etcdserverpb::AuthUserChangePasswordResponse* response) override;
  grpc::ServerUnaryReactor* UserGrantRole(
      grpc::CallbackServerContext* context, const etcdserverpb::AuthUserGrantRoleRequest* request,
      etcdserverpb::AuthUserGrantRoleResponse* response) override;
  grpc::ServerUnaryReactor* UserRevokeRole(
      grpc::CallbackServerContext* context, const etcdserverpb::AuthUserRevokeRoleRequest* request,
      etcdserverpb::AuthUserRevokeRoleResponse* response) override;
  grpc::ServerUnaryReactor* RoleAdd(grpc::CallbackServerContext* context,
                                    const etcdserverpb::AuthRoleAddRequest* request,
                                    etcdserverpb::AuthRoleAddResponse* response) override;
  grpc::ServerUnaryReactor* RoleGet(grpc::CallbackServerContext* context,
                                    const etcdserverpb::AuthRoleGetRequest* request,
                                    etcdserverpb::AuthRoleGetResponse* response) override;
  grpc::ServerUnaryReactor* RoleList(grpc::CallbackServerContext* context,
                                     const etcdserverpb::AuthRoleListRequest* request,
                                     etcdserverpb::AuthRoleListResponse* response) override;
  grpc::ServerUnaryReactor* RoleDelete(grpc::CallbackServerContext* context,
                                       const etcdserverpb::AuthRoleDeleteRequest* request,
                                       etcdserverpb::AuthRoleDeleteResponse* response) override;
  grpc::ServerUnaryReactor* RoleGrantPermission(
      grpc::CallbackServerContext* context,
      const etcdserverpb::AuthRoleGrantPermissionRequest* request,
      etcdserverpb::AuthRoleGrantPermissionResponse* response) override;
  grpc::ServerUnaryReactor* RoleRevokePermission(
      grpc::CallbackServerContext* context,
      const etcdserverpb::AuthRoleRevokePermissionRequest* request,
      etcdserverpb::AuthRoleRevokePermissionResponse* response) override;

 private:
  // Proposes an auth change for the call's user and answers with just a header.
  template <typename Response>
  grpc::ServerUnaryReactor* ProposeChange(grpc::CallbackServerContext* context,
                                          internalpb::AuthRequest change, Response* response);
  // Answers a query from the applied state once this member has caught up with the log.
  template <typename Response, typename Serve>
  grpc::ServerUnaryReactor* Query(grpc::CallbackServerContext* context, Response* response,
                                  Serve serve);
  // Proposes `entry` and waits for it to be applied (on a BlockingCalls thread).
  [[nodiscard]] absl::Status ProposeAndWait(internalpb::InternalRequest entry);
  // A hash to check an unknown user's password against, so that the answer takes as long as for
  // a known user.
  const std::string& DecoyHash();

  Member* const member_;
  BlockingCalls* const calls_;
  const absl::Duration failure_delay_;
  std::once_flag decoy_once_;
  std::string decoy_hash_;
};

}  // namespace leasehold::server
