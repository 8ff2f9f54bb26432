#include "server/watch/key_range_index.h"

#include "client/leasehold/client.h"

namespace leasehold::server {

KeyRangeKind KindOfKeyRange(const std::string& key, const std::string& range_end) {
  if (range_end.empty()) return KeyRangeKind::kSingle;
  if (range_end == std::string_view("\0", 1)) return KeyRangeKind::kFromKey;
  // A key of only 0xff bytes has the prefix end "\0", a from-key range, already taken above.
  return range_end == PrefixEnd(key) ? KeyRangeKind::kPrefix : KeyRangeKind::kOther;
}

}  // namespace leasehold::server
