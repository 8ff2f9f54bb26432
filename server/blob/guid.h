// GUIDs as Azure lease ids: every textual form .NET's Guid accepts for D, N, B and P ("xxxxxxxx-
// xxxx-xxxx-xxxx-xxxxxxxxxxxx", 32 bare hex digits, and the D form in braces or parentheses, any
// case) names the same lease, so ids are compared in one canonical form: lower-case D.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace leasehold::server {

// The canonical form of `text`, or nullopt when it is not a GUID in one of those forms.
std::optional<std::string> CanonicalGuid(std::string_view text);
// A fresh random (version 4) GUID in canonical form.
std::string NewGuid();

}  // namespace leasehold::server
