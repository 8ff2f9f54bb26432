// etcd's pre-proposal checks, with etcd's messages.
#include "server/api/request_validation.h"

#include <gtest/gtest.h>

namespace leasehold::server {
namespace {

TEST(RequestValidationTest, PutChecks) {
  etcdserverpb::PutRequest put;
  EXPECT_EQ(ValidatePut(put).message(), "etcdserver: key is not provided");
  put.set_key("k");
  EXPECT_TRUE(ValidatePut(put).ok());
  put.set_ignore_value(true);
  put.set_value("v");
  EXPECT_EQ(ValidatePut(put).message(), "etcdserver: value is provided");
  put.clear_value();
  put.set_ignore_lease(true);
  put.set_lease(3);
  EXPECT_EQ(ValidatePut(put).message(), "etcdserver: lease is provided");
}

TEST(RequestValidationTest, TxnTooManyOps) {
  etcdserverpb::TxnRequest txn;
  for (int i = 0; i < 3; ++i)
    txn.add_success()->mutable_request_range()->set_key("k" + std::to_string(i));
  EXPECT_TRUE(ValidateTxn(txn, 3).ok());
  auto st = ValidateTxn(txn, 2);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "etcdserver: too many operations in txn request");
}

TEST(RequestValidationTest, TxnDuplicateKeys) {
  etcdserverpb::TxnRequest txn;
  txn.add_success()->mutable_request_put()->set_key("a");
  txn.add_success()->mutable_request_put()->set_key("a");
  EXPECT_EQ(ValidateTxn(txn, 128).message(), "etcdserver: duplicate key given in txn request");

  etcdserverpb::TxnRequest put_in_delete;
  put_in_delete.add_success()->mutable_request_put()->set_key("b");
  auto* del = put_in_delete.add_success()->mutable_request_delete_range();
  del->set_key("a");
  del->set_range_end("c");
  EXPECT_EQ(ValidateTxn(put_in_delete, 128).message(),
            "etcdserver: duplicate key given in txn request");

  // The same key in the success and the failure branch is fine: only one branch runs.
  etcdserverpb::TxnRequest branches;
  branches.add_success()->mutable_request_put()->set_key("a");
  branches.add_failure()->mutable_request_put()->set_key("a");
  EXPECT_TRUE(ValidateTxn(branches, 128).ok());

  etcdserverpb::TxnRequest nested;
  nested.add_success()->mutable_request_put()->set_key("a");
  nested.add_success()->mutable_request_txn()->add_failure()->mutable_request_put()->set_key("a");
  EXPECT_EQ(ValidateTxn(nested, 128).message(), "etcdserver: duplicate key given in txn request");
}

TEST(RequestValidationTest, EmptyKeysAnywhere) {
  etcdserverpb::TxnRequest txn;
  txn.add_compare();
  EXPECT_EQ(ValidateTxn(txn, 128).message(), "etcdserver: key is not provided");
  etcdserverpb::TxnRequest op;
  op.add_failure()->mutable_request_delete_range();
  EXPECT_EQ(ValidateTxn(op, 128).message(), "etcdserver: key is not provided");
  EXPECT_EQ(ValidateRange(etcdserverpb::RangeRequest()).message(),
            "etcdserver: key is not provided");
}

TEST(RequestValidationTest, AnEmptyOpIsRefusedAsEtcdRefusesIt) {
  etcdserverpb::TxnRequest txn;
  txn.add_success()->mutable_request_put()->set_key("k");
  txn.add_success();  // no request set
  absl::Status st = ValidateTxn(txn, 128);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_EQ(st.message(), "etcdserver: key not found");
  etcdserverpb::TxnRequest nested;
  nested.add_failure()->mutable_request_txn()->add_success();
  EXPECT_EQ(ValidateTxn(nested, 128).message(), "etcdserver: key not found");
}

}  // namespace
}  // namespace leasehold::server
