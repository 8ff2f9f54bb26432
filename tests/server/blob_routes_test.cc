#include "server/blob/blob_routes.h"

#include <gtest/gtest.h>

#include "server/blob/blob_error.h"

namespace leasehold::server {
namespace {

namespace http = boost::beast::http;

TEST(BlobError, TravelsWholeInsideAStatus) {
  absl::Status st = BlobError{412, "ConditionNotMet", "The condition specified was not met.",
                              {{"HeaderName", "If-Match"}, {"HeaderValue", "\"0x1\""}}};
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  BlobError back = BlobErrorOf(st);
  EXPECT_EQ(back.status, 412);
  EXPECT_EQ(back.code, "ConditionNotMet");
  EXPECT_EQ(back.message, "The condition specified was not met.");
  ASSERT_EQ(back.details.size(), 2u);
  EXPECT_EQ(back.details[1].second, "\"0x1\"");
}

TEST(BlobError, AStatusNotMadeFromOneIsAnInternalError) {
  BlobError back = BlobErrorOf(absl::UnavailableError("etcdserver: no leader"));
  EXPECT_EQ(back.status, 500);
  EXPECT_EQ(back.code, "InternalError");
  EXPECT_EQ(back.message, "etcdserver: no leader");
}

TEST(BlobRoutes, PickTheOperationByResourceMethodAndComp) {
  const BlobRoute* lease = FindBlobRoute(BlobResource::kBlob, http::verb::put, "lease");
  ASSERT_NE(lease, nullptr);
  EXPECT_EQ(lease->op, internalpb::BlobRequest::LEASE_BLOB);
  EXPECT_EQ(lease->action, BlobRoute::Action::kPropose);
  const BlobRoute* head = FindBlobRoute(BlobResource::kBlob, http::verb::head, "");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->op, internalpb::BlobRequest::GET_BLOB_PROPERTIES);
  EXPECT_EQ(FindBlobRoute(BlobResource::kContainer, http::verb::get, "list")->action,
            BlobRoute::Action::kListBlobs);
}

TEST(BlobRoutes, NoRouteIsAnUnknownQueryOrAnUnsupportedVerb) {
  // Known comp, other method: 405.
  EXPECT_EQ(FindBlobRoute(BlobResource::kBlob, http::verb::delete_, "lease"), nullptr);
  EXPECT_TRUE(KnownComp(BlobResource::kBlob, "lease"));
  // A container's listing is a GET only: comp=list with PUT is an unknown query (400).
  EXPECT_EQ(FindBlobRoute(BlobResource::kContainer, http::verb::put, "list"), nullptr);
  EXPECT_FALSE(KnownComp(BlobResource::kContainer, "list"));
  EXPECT_TRUE(KnownComp(BlobResource::kAccount, "list"));
  EXPECT_FALSE(KnownComp(BlobResource::kBlob, "block"));
}

}  // namespace
}  // namespace leasehold::server
