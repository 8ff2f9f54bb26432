#include "server/caller.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace leasehold::server {

std::string AuthTokenOf(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  for (const char* name : {"token", "authorization"}) {
    if (auto it = metadata.find(name); it != metadata.end()) return std::string(it->second.data(), it->second.size());
  }
  return std::string();
}

absl::StatusOr<std::string> CallerOf(Member& member, const grpc::ServerContextBase& context) {
  return member.AuthenticatedUser(AuthTokenOf(context));
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
