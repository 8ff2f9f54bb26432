#include "server/api/auth_service.h"

#include <openssl/rand.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/etcd_errors.h"
#include "common/status_macros.h"
#include "server/api/propose_reactor.h"
#include "server/auth/jwt_tokens.h"
#include "server/auth/password.h"
#include "server/observability/log.h"

namespace leasehold::server {
namespace {

// etcd's simple token shape: 16 random letters, a dot, then a number unique to this grant.
absl::StatusOr<std::string> NewSimpleToken(int64_t unique) {
  static constexpr char kLetters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  unsigned char random[16];
  if (RAND_bytes(random, sizeof random) != 1)
    return absl::InternalError("no randomness for a token");
  std::string token;
  for (unsigned char byte : random) token.push_back(kLetters[byte % 52]);
  return absl::StrCat(token, ".", unique);
}

// The hash to store: the client's own when it sends one and no password (etcd 3.5's
// hashedPassword), otherwise a fresh one of `password`.
absl::StatusOr<std::string> HashToStore(const std::string& password, const std::string& given_hash,
                                        int cost) {
  if (!given_hash.empty() && password.empty()) return given_hash;
  return HashPassword(password, cost);
}

}  // namespace

AuthService::AuthService(Member* member, BlockingCalls* calls, absl::Duration failure_delay)
    : member_(member), calls_(calls), failure_delay_(failure_delay) {}

const std::string& AuthService::DecoyHash() {
  // Made on first need, off the start-up path (one bcrypt run).
  std::call_once(decoy_once_, [this] {
    auto decoy = HashPassword("decoy", member_->config().bcrypt_cost);
    if (decoy.ok()) decoy_hash_ = std::move(*decoy);
  });
  return decoy_hash_;
}

absl::Status AuthService::ProposeAndWait(internalpb::InternalRequest entry) {
  absl::Notification applied;
  absl::Status status;
  member_->Submit(std::move(entry), [&](storage::ApplyResult result) {
    status = std::move(result.status);
    applied.Notify();
  });
  applied.WaitForNotification();  // Submit always answers: applied, refused or timed out
  return status;
}

template <typename Response>
grpc::ServerUnaryReactor* AuthService::ProposeChange(grpc::CallbackServerContext* context,
                                                     internalpb::AuthRequest change,
                                                     Response* response) {
  internalpb::InternalRequest entry;
  *entry.mutable_auth() = std::move(change);
  return ProposeAndFinish(context, member_, std::move(entry), response,
                          [](internalpb::InternalResponse&, Response*) {});
}

template <typename Response, typename Serve>
grpc::ServerUnaryReactor* AuthService::Query(grpc::CallbackServerContext* context,
                                             Response* response, Serve serve) {
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  member_->proposer().ReadBarrier(
      [this, reactor, response, serve, user = std::move(*user)](absl::Status barrier) {
        if (barrier.ok()) barrier = serve(member_->state_machine().auth(), user);
        if (barrier.ok()) member_->FillHeader(response->mutable_header());
        reactor->Finish(ToGrpcStatus(barrier));
      });
  return reactor;
}

grpc::ServerUnaryReactor* AuthService::AuthEnable(grpc::CallbackServerContext* context,
                                                  const etcdserverpb::AuthEnableRequest* request,
                                                  etcdserverpb::AuthEnableResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::AuthRequest change;
  *change.mutable_enable() = *request;
  return ProposeChange(context, std::move(change), response);
}

grpc::ServerUnaryReactor* AuthService::AuthDisable(grpc::CallbackServerContext* context,
                                                   const etcdserverpb::AuthDisableRequest* request,
                                                   etcdserverpb::AuthDisableResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::AuthRequest change;
  *change.mutable_disable() = *request;
  return ProposeChange(context, std::move(change), response);
}

grpc::ServerUnaryReactor* AuthService::AuthStatus(grpc::CallbackServerContext* context,
                                                  const etcdserverpb::AuthStatusRequest* request,
                                                  etcdserverpb::AuthStatusResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return Query(context, response, [response](const storage::AuthTable& auth, const std::string&) {
    response->set_enabled(auth.enabled());
    response->set_authrevision(auth.revision());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AuthService::Authenticate(
    grpc::CallbackServerContext* context, const etcdserverpb::AuthenticateRequest* request,
    etcdserverpb::AuthenticateResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  if (!member_->state_machine().auth().enabled())
    return FinishNow(context, errors::AuthNotEnabled());
  return calls_->Unary(context, [this, request, response](Client&,
                                                          const CancellationToken& cancel) {
    std::optional<authpb::User> user = member_->state_machine().auth().GetUser(request->name());
    bool matches = false;
    if (user && !user->options().no_password()) {
      matches = PasswordMatches(request->password(), user->password());
    } else {
      PasswordMatches(request->password(),
                      DecoyHash());  // the same work, whether or not the user exists
    }
    if (!matches) {
      LogWarn("authentication failed", {{"user", request->name()}});
      cancel.WaitFor(failure_delay_);
      return ToGrpcStatus(errors::AuthFailed());
    }
    auto token = NewSimpleToken(member_->NextId());
    if (!token.ok()) return ToGrpcStatus(token.status());
    internalpb::InternalRequest entry;
    auto* grant = entry.mutable_auth()->mutable_authenticate();
    grant->set_name(request->name());
    grant->set_token(*token);
    grant->set_password_hash(user->password());
    if (absl::Status st = ProposeAndWait(std::move(entry)); !st.ok()) return ToGrpcStatus(st);
    if (const JwtTokens* jwt = member_->config().jwt; jwt != nullptr) {
      // Signed once the grant applied here, at the auth revision it applied at, as etcd's are.
      token = jwt->Sign(request->name(), member_->state_machine().auth().revision(), absl::Now());
      if (!token.ok()) return ToGrpcStatus(token.status());
    }
    response->set_token(*token);
    member_->FillHeader(response->mutable_header());
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AuthService::UserAdd(grpc::CallbackServerContext* context,
                                               const etcdserverpb::AuthUserAddRequest* request,
                                               etcdserverpb::AuthUserAddResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  // Refused before hashing, so that a caller without the root role cannot make us spend CPU; the
  // check is made again when the change is applied.
  if (absl::Status st = member_->state_machine().auth().CheckAdmin(*user); !st.ok())
    return FinishNow(context, st);
  if (request->name().empty()) return FinishNow(context, errors::UserEmpty());
  return calls_->Unary(context, [this, request, response, user = std::move(*user)](
                                    Client&, const CancellationToken&) {
    internalpb::InternalRequest entry;
    entry.mutable_caller()->set_user(user);
    auto* add = entry.mutable_auth()->mutable_user_add();
    *add = *request;
    add->clear_password();
    add->clear_hashedpassword();
    if (!request->options().no_password()) {
      auto hash = HashToStore(request->password(), request->hashedpassword(),
                              member_->config().bcrypt_cost);
      if (!hash.ok()) return ToGrpcStatus(hash.status());
      add->set_hashedpassword(*hash);
    }
    if (absl::Status st = ProposeAndWait(std::move(entry)); !st.ok()) return ToGrpcStatus(st);
    member_->FillHeader(response->mutable_header());
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AuthService::UserChangePassword(
    grpc::CallbackServerContext* context,
    const etcdserverpb::AuthUserChangePasswordRequest* request,
    etcdserverpb::AuthUserChangePasswordResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  absl::StatusOr<std::string> user = CallerOf(*member_, *context);
  if (!user.ok()) return FinishNow(context, user.status());
  if (absl::Status st = member_->state_machine().auth().CheckAdmin(*user); !st.ok())
    return FinishNow(context, st);
  return calls_->Unary(context, [this, request, response, user = std::move(*user)](
                                    Client&, const CancellationToken&) {
    internalpb::InternalRequest entry;
    entry.mutable_caller()->set_user(user);
    auto* change = entry.mutable_auth()->mutable_user_change_password();
    *change = *request;
    change->clear_password();
    auto hash =
        HashToStore(request->password(), request->hashedpassword(), member_->config().bcrypt_cost);
    if (!hash.ok()) return ToGrpcStatus(hash.status());
    change->set_hashedpassword(*hash);
    if (absl::Status st = ProposeAndWait(std::move(entry)); !st.ok()) return ToGrpcStatus(st);
    member_->FillHeader(response->mutable_header());
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* AuthService::UserGet(grpc::CallbackServerContext* context,
                                               const etcdserverpb::AuthUserGetRequest* request,
                                               etcdserverpb::AuthUserGetResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return Query(context, response,
               [request, response](const storage::AuthTable& auth, const std::string& caller) {
                 // A user may look themselves up; anyone else needs the root role.
                 if (request->name() != caller) RETURN_IF_ERROR(auth.CheckAdmin(caller));
                 std::optional<authpb::User> user = auth.GetUser(request->name());
                 if (!user) return errors::UserNotFound();
                 for (const auto& role : user->roles()) response->add_roles(role);
                 return absl::OkStatus();
               });
}

grpc::ServerUnaryReactor* AuthService::UserList(grpc::CallbackServerContext* context,
                                                const etcdserverpb::AuthUserListRequest* request,
                                                etcdserverpb::AuthUserListResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return Query(context, response,
               [response](const storage::AuthTable& auth, const std::string& caller) {
                 RETURN_IF_ERROR(auth.CheckAdmin(caller));
                 for (auto& name : auth.UserNames()) response->add_users(std::move(name));
                 return absl::OkStatus();
               });
}

grpc::ServerUnaryReactor* AuthService::UserDelete(
    grpc::CallbackServerContext* context, const etcdserverpb::AuthUserDeleteRequest* request,
    etcdserverpb::AuthUserDeleteResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::AuthRequest change;
  *change.mutable_user_delete() = *request;
  return ProposeChange(context, std::move(change), response);
}

grpc::ServerUnaryReactor* AuthService::UserGrantRole(
    grpc::CallbackServerContext* context, const etcdserverpb::AuthUserGrantRoleRequest* request,
    etcdserverpb::AuthUserGrantRoleResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::AuthRequest change;
  *change.mutable_user_grant_role() = *request;
  return ProposeChange(context, std::move(change), response);
}

grpc::ServerUnaryReactor* AuthService::UserRevokeRole(
    grpc::CallbackServerContext* context, const etcdserverpb::AuthUserRevokeRoleRequest* request,
    etcdserverpb::AuthUserRevokeRoleResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::AuthRequest change;
  *change.mutable_user_revoke_role() = *request;
  return ProposeChange(context, std::move(change), response);
}

grpc::ServerUnaryReactor* AuthService::RoleAdd(grpc::CallbackServerContext* context,
                                               const etcdserverpb::AuthRoleAddRequest* request,
                                               etcdserverpb::AuthRoleAddResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::AuthRequest change;
  *change.mutable_role_add() = *request;
  return ProposeChange(context, std::move(change), response);
}

grpc::ServerUnaryReactor* AuthService::RoleGet(grpc::CallbackServerContext* context,
                                               const etcdserverpb::AuthRoleGetRequest* request,
                                               etcdserverpb::AuthRoleGetResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return Query(context, response,
               [request, response](const storage::AuthTable& auth, const std::string& caller) {
                 // A user may look up a role they hold; any other needs the root role.
                 std::optional<authpb::User> self = auth.GetUser(caller);
                 const bool holds = self && std::find(self->roles().begin(), self->roles().end(),
                                                      request->role()) != self->roles().end();
                 if (!holds) RETURN_IF_ERROR(auth.CheckAdmin(caller));
                 std::optional<authpb::Role> role = auth.GetRole(request->role());
                 if (!role) return errors::RoleNotFound();
                 for (const auto& permission : role->keypermission())
                   *response->add_perm() = permission;
                 return absl::OkStatus();
               });
}

grpc::ServerUnaryReactor* AuthService::RoleList(grpc::CallbackServerContext* context,
                                                const etcdserverpb::AuthRoleListRequest* request,
                                                etcdserverpb::AuthRoleListResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  return Query(context, response,
               [response](const storage::AuthTable& auth, const std::string& caller) {
                 RETURN_IF_ERROR(auth.CheckAdmin(caller));
                 for (auto& name : auth.RoleNames()) response->add_roles(std::move(name));
                 return absl::OkStatus();
               });
}

grpc::ServerUnaryReactor* AuthService::RoleDelete(
    grpc::CallbackServerContext* context, const etcdserverpb::AuthRoleDeleteRequest* request,
    etcdserverpb::AuthRoleDeleteResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::AuthRequest change;
  *change.mutable_role_delete() = *request;
  return ProposeChange(context, std::move(change), response);
}

grpc::ServerUnaryReactor* AuthService::RoleGrantPermission(
    grpc::CallbackServerContext* context,
    const etcdserverpb::AuthRoleGrantPermissionRequest* request,
    etcdserverpb::AuthRoleGrantPermissionResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::AuthRequest change;
  *change.mutable_role_grant_permission() = *request;
  return ProposeChange(context, std::move(change), response);
}

grpc::ServerUnaryReactor* AuthService::RoleRevokePermission(
    grpc::CallbackServerContext* context,
    const etcdserverpb::AuthRoleRevokePermissionRequest* request,
    etcdserverpb::AuthRoleRevokePermissionResponse* response) {
  if (absl::Status st = member_->LearnerRefusal(); !st.ok()) return FinishNow(context, st);
  internalpb::AuthRequest change;
  *change.mutable_role_revoke_permission() = *request;
  return ProposeChange(context, std::move(change), response);
}

}  // namespace leasehold::server
