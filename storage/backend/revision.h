// A store revision: `main` advances once per write transaction, `sub` numbers the changes within
// it.
#pragma once

#include <compare>
#include <cstdint>

namespace leasehold::storage {

struct Revision {
  int64_t main = 0;
  int64_t sub = 0;
  auto operator<=>(const Revision&) const = default;
};

}  // namespace leasehold::storage
