// Small helpers for propagating absl::Status (Debian's Abseil ships none).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define LH_CONCAT_INNER(a, b) a##b
#define LH_CONCAT(a, b) LH_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                \
  do {                                       \
    ::absl::Status lh_status_ = (expr);      \
    if (!lh_status_.ok()) return lh_status_; \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(*tmp)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(LH_CONCAT(lh_statusor_, __LINE__), lhs, expr)

namespace leasehold {

// `status` with what it concerns in front of its message ("bad --cipher-suites: ..."), same code.
inline absl::Status WithContext(std::string_view what, const absl::Status& status) {
  return absl::Status(status.code(), std::string(what) + ": " + std::string(status.message()));
}

}  // namespace leasehold
