#include "server/api/request_validation.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/etcd_errors.h"
#include "common/status_macros.h"
#include "storage/mvcc/mvcc_store.h"

namespace leasehold::server {
namespace {

using Ops = google::protobuf::RepeatedPtrField<etcdserverpb::RequestOp>;

struct Touched {
  std::set<std::string> puts;
  std::vector<std::pair<std::string, std::string>> deletes;  // [key, range_end)
};

bool InDelete(const std::string& key, const std::pair<std::string, std::string>& del) {
  return storage::MvccStore::InRange(key, del.first, del.second);
}

absl::Status CollectTouched(const Ops& ops, Touched* out);

absl::Status MergeNested(const etcdserverpb::TxnRequest& txn, Touched* out) {
  for (const Ops* branch : {&txn.success(), &txn.failure()}) {
    Touched inner;
    RETURN_IF_ERROR(CollectTouched(*branch, &inner));
    for (const auto& key : inner.puts) {
      if (out->puts.contains(key)) return errors::DuplicateKey();
    }
    for (const auto& del : out->deletes) {
      for (const auto& key : inner.puts) {
        if (InDelete(key, del)) return errors::DuplicateKey();
      }
    }
  }
  // Both branches' keys join the parent's: a parent op conflicts with either.
  for (const Ops* branch : {&txn.success(), &txn.failure()}) {
    Touched inner;
    RETURN_IF_ERROR(CollectTouched(*branch, &inner));
    out->puts.insert(inner.puts.begin(), inner.puts.end());
    out->deletes.insert(out->deletes.end(), inner.deletes.begin(), inner.deletes.end());
  }
  return absl::OkStatus();
}

absl::Status CollectTouched(const Ops& ops, Touched* out) {
  for (const auto& op : ops) {
    if (op.has_request_put()) {
      if (!out->puts.insert(op.request_put().key()).second) return errors::DuplicateKey();
    } else if (op.has_request_delete_range()) {
      out->deletes.emplace_back(op.request_delete_range().key(),
                                op.request_delete_range().range_end());
    }
  }
  for (const auto& key : out->puts) {
    for (const auto& del : out->deletes) {
      if (InDelete(key, del)) return errors::DuplicateKey();
    }
  }
  for (const auto& op : ops) {
    if (op.has_request_txn()) RETURN_IF_ERROR(MergeNested(op.request_txn(), out));
  }
  return absl::OkStatus();
}

absl::Status ValidateOps(const Ops& ops, int max_ops) {
  for (const auto& op : ops) {
    switch (op.request_case()) {
      case etcdserverpb::RequestOp::kRequestRange:
        RETURN_IF_ERROR(ValidateRange(op.request_range()));
        break;
      case etcdserverpb::RequestOp::kRequestPut:
        RETURN_IF_ERROR(ValidatePut(op.request_put()));
        break;
      case etcdserverpb::RequestOp::kRequestDeleteRange:
        RETURN_IF_ERROR(ValidateDeleteRange(op.request_delete_range()));
        break;
      case etcdserverpb::RequestOp::kRequestTxn:
        RETURN_IF_ERROR(ValidateTxn(op.request_txn(), max_ops));
        break;
      case etcdserverpb::RequestOp::REQUEST_NOT_SET:
        return errors::KeyNotFound();  // an empty op, as etcd answers it
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRange(const etcdserverpb::RangeRequest& request) {
  if (request.key().empty()) return errors::EmptyKey();
  return absl::OkStatus();
}

absl::Status ValidatePut(const etcdserverpb::PutRequest& request) {
  if (request.key().empty()) return errors::EmptyKey();
  if (request.ignore_value() && !request.value().empty()) return errors::ValueProvided();
  if (request.ignore_lease() && request.lease() != 0) return errors::LeaseProvided();
  return absl::OkStatus();
}

absl::Status ValidateDeleteRange(const etcdserverpb::DeleteRangeRequest& request) {
  if (request.key().empty()) return errors::EmptyKey();
  return absl::OkStatus();
}

absl::Status ValidateTxn(const etcdserverpb::TxnRequest& request, int max_ops) {
  if (request.compare_size() > max_ops || request.success_size() > max_ops ||
      request.failure_size() > max_ops) {
    return errors::TooManyOps();
  }
  for (const auto& compare : request.compare()) {
    if (compare.key().empty()) return errors::EmptyKey();
  }
  RETURN_IF_ERROR(ValidateOps(request.success(), max_ops));
  RETURN_IF_ERROR(ValidateOps(request.failure(), max_ops));
  Touched success, failure;
  RETURN_IF_ERROR(CollectTouched(request.success(), &success));
  return CollectTouched(request.failure(), &failure);
}

}  // namespace leasehold::server
