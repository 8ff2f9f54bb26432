// The client library's rule for a failed call: move to another endpoint on Unavailable; resend a
// write only when the server surely did nothing with it.
#include <gtest/gtest.h>

#include "client/leasehold/endpoints.h"

namespace leasehold {
namespace {

grpc::Status Unavailable(const char* message) {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, message);
}

TEST(RetryPolicyTest, AWriteIsResentOnlyWhenNothingWasDone) {
  // Refused before anything was proposed: safe to send to the next member.
  EXPECT_TRUE(RetryPolicy::MayResend(Unavailable("etcdserver: no leader"), false));
  EXPECT_TRUE(
      RetryPolicy::MayResend(Unavailable("etcdserver: rpc not supported for learner"), false));
  EXPECT_TRUE(RetryPolicy::MayResend(
      Unavailable("failed to connect to all addresses; last error: x"), false));
  // The write may have been committed: resending could apply it twice.
  EXPECT_FALSE(RetryPolicy::MayResend(Unavailable("etcdserver: leader changed"), false));
  EXPECT_FALSE(RetryPolicy::MayResend(Unavailable("etcdserver: request timed out"), false));
  EXPECT_FALSE(RetryPolicy::MayResend(
      grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: key is not provided"), false));
  // A read may always be asked again elsewhere.
  EXPECT_TRUE(RetryPolicy::MayResend(Unavailable("etcdserver: leader changed"), true));
}

TEST(RetryPolicyTest, ALearnersRefusalMovesToAnotherMember) {
  EXPECT_TRUE(
      RetryPolicy::ShouldFailover(Unavailable("etcdserver: rpc not supported for learner")));
  EXPECT_FALSE(RetryPolicy::ShouldFailover(
      grpc::Status(grpc::StatusCode::NOT_FOUND, "etcdserver: requested lease not found")));
}

}  // namespace
}  // namespace leasehold
