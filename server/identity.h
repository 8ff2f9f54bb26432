// A member's cluster and member ids: chosen once when the data dir is created, then read back.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "leasehold/internal.pb.h"
#include "server/flags.h"
#include "storage/engine.h"

namespace leasehold::server {

absl::StatusOr<internalpb::MemberIdentity> LoadOrCreateIdentity(storage::Engine* engine, const Flags& flags);

}  // namespace leasehold::server
