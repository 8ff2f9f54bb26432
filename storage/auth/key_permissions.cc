#include "storage/auth/key_permissions.h"

#include <algorithm>
#include <string>

namespace leasehold::storage {
namespace {

// [begin, end), or [begin, ∞) when unbounded.
struct Interval {
  std::string_view begin;
  std::string end;
  bool unbounded = false;
};

Interval ToInterval(std::string_view key, std::string_view range_end) {
  Interval interval;
  interval.begin = key;
  if (range_end.empty()) {
    interval.end =
        std::string(key) + '\0';  // the single key: the smallest key after it is key+"\0"
  } else if (range_end == std::string_view("\0", 1)) {
    interval.unbounded = true;
  } else {
    interval.end = std::string(range_end);
  }
  return interval;
}

bool IsEmpty(const Interval& interval) {
  return !interval.unbounded && interval.end <= interval.begin;
}

}  // namespace

bool Grants(const authpb::Permission& permission, Access access) {
  switch (permission.permtype()) {
    case authpb::Permission::READWRITE:
      return true;
    case authpb::Permission::READ:
      return access == Access::kRead;
    case authpb::Permission::WRITE:
      return access == Access::kWrite;
    default:
      return false;
  }
}

bool PermissionsCover(const std::vector<const authpb::Permission*>& granted, Access access,
                      std::string_view key, std::string_view range_end) {
  const Interval wanted = ToInterval(key, range_end);
  if (IsEmpty(wanted)) return false;
  std::vector<Interval> have;
  for (const authpb::Permission* permission : granted) {
    if (!Grants(*permission, access)) continue;
    Interval interval = ToInterval(permission->key(), permission->range_end());
    if (!IsEmpty(interval)) have.push_back(std::move(interval));
  }
  std::sort(have.begin(), have.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  // Sweep: `covered_to` is how far from wanted.begin the permissions reach without a gap.
  std::string covered_to(wanted.begin);
  for (const Interval& interval : have) {
    if (interval.begin > covered_to) break;  // a gap (sorted: no later interval starts earlier)
    if (interval.unbounded) return true;
    if (interval.end > covered_to) covered_to = interval.end;
    if (!wanted.unbounded && covered_to >= wanted.end) return true;
  }
  return false;
}

}  // namespace leasehold::storage
