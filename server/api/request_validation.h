// Checks etcd performs on a request before proposing it (v3rpc's key checks), with etcd's errors.
#pragma once

#include "absl/status/status.h"
#include "etcdserverpb/rpc.pb.h"

namespace leasehold::server {

[[nodiscard]] absl::Status ValidateRange(const etcdserverpb::RangeRequest& request);
[[nodiscard]] absl::Status ValidatePut(const etcdserverpb::PutRequest& request);
[[nodiscard]] absl::Status ValidateDeleteRange(const etcdserverpb::DeleteRangeRequest& request);
// Counts operations per branch against `max_ops`, validates every operation (nested transactions
// too) and refuses a put that another put or a delete of the same branch also touches.
[[nodiscard]] absl::Status ValidateTxn(const etcdserverpb::TxnRequest& request, int max_ops);

}  // namespace leasehold::server
