// Whether a role's key permissions cover a request's key or range: etcd's range permission check.
// A permission or request names one key (empty range_end), a range [key, range_end), or every key
// from `key` on (range_end "\0"). A range request is allowed only when the union of the permissions
// granting the access covers all of it, whichever permissions it takes to cover it.
#pragma once

#include <string_view>
#include <vector>

#include "authpb/auth.pb.h"

namespace leasehold::storage {

enum class Access { kRead, kWrite };

// Whether `permission`'s type grants `access` (READWRITE grants both).
bool Grants(const authpb::Permission& permission, Access access);

// Whether the permissions in `granted` that grant `access` cover [key, range_end).
// A request whose range is empty (range_end at or before key) is not covered.
bool PermissionsCover(const std::vector<const authpb::Permission*>& granted, Access access,
                      std::string_view key, std::string_view range_end);

}  // namespace leasehold::storage
