#include "server/api/caller.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace leasehold::server {

std::string AuthTokenOf(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  for (const char* name : {"token", "authorization"}) {
    if (auto it = metadata.find(name); it != metadata.end())
      return std::string(it->second.data(), it->second.size());
  }
  return std::string();
}

std::string CertUserOf(const grpc::ServerContextBase& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (!auth || !auth->IsPeerAuthenticated()) return std::string();
  std::vector<grpc::string_ref> names = auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
  return names.empty() ? std::string() : std::string(names.front().data(), names.front().size());
}

absl::StatusOr<std::string> CallerOf(Member& member, const grpc::ServerContextBase& context) {
  return member.AuthenticatedUser(AuthTokenOf(context), [&context] { return CertUserOf(context); });
}

absl::Status CheckCallerIsAdmin(Member& member, const grpc::ServerContextBase& context) {
  absl::StatusOr<std::string> user = CallerOf(member, context);
  if (!user.ok()) return user.status();
  return member.state_machine().auth().CheckAdmin(*user);
}

absl::Status CheckMaintenanceCaller(Member& member, const grpc::ServerContextBase& context) {
  absl::Status st = CheckCallerIsAdmin(member, context);
  if (st.ok()) return st;
  absl::string_view message = st.message();
  absl::ConsumePrefix(&message, "etcdserver: ");
  return absl::UnknownError(absl::StrCat("auth: ", message));
}

}  // namespace leasehold::server
