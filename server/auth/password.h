// Password hashing for etcd's v3 auth: bcrypt (libxcrypt's "$2b$"), the same slow, salted hash
// etcd stores. Hashing takes tens of milliseconds at the default cost by design: run it off gRPC's
// callback threads.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace leasehold::server {

// etcd's default --bcrypt-cost.
inline constexpr int kDefaultBcryptCost = 10;

// A fresh salted hash of `password`. InvalidArgument for a cost outside bcrypt's 4..31 or a
// password with a NUL byte (bcrypt cannot hash past one); Internal if the library fails.
[[nodiscard]] absl::StatusOr<std::string> HashPassword(std::string_view password, int cost);

// Whether `password` hashes to `hash` (compared in constant time). False for a malformed hash.
bool PasswordMatches(std::string_view password, const std::string& hash);

}  // namespace leasehold::server
