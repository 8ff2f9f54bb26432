#include "server/blob/blob_routes.h"

#include <array>
#include <string>

#include "common/status_macros.h"
#include "server/blob/blob_request_parser.h"
#include "server/blob/blob_tag_document.h"

namespace leasehold::server {
namespace {

namespace http = boost::beast::http;
using internalpb::BlobRequest;
using Action = BlobRoute::Action;

// Set and Get Blob Tags honour x-ms-if-tags and no other condition (the service ignores If-Match
// and the dates there).
void KeepOnlyTagCondition(BlobRequest* blob) {
  std::string if_tags = blob->conditions().if_tags();
  blob->clear_conditions();
  blob->mutable_conditions()->set_if_tags(std::move(if_tags));
}

absl::Status Plain(HttpRequest& request, BlobRequest* blob) {
  return ParseCommonHeaders(request, /*with_metadata=*/false, blob);
}

absl::Status CreateContainer(HttpRequest& request, BlobRequest* blob) {
  RETURN_IF_ERROR(ParseCommonHeaders(request, /*with_metadata=*/true, blob));
  blob->set_public_access(Header(request, "x-ms-blob-public-access"));
  if (!blob->public_access().empty() && blob->public_access() != "container" &&
      blob->public_access() != "blob") {
    return BadHeader("x-ms-blob-public-access", blob->public_access());
  }
  return absl::OkStatus();
}

absl::Status Lease(HttpRequest& request, BlobRequest* blob) {
  RETURN_IF_ERROR(Plain(request, blob));
  return ParseLeaseHeaders(request, blob);
}

absl::Status GetTags(HttpRequest& request, BlobRequest* blob) {
  RETURN_IF_ERROR(Plain(request, blob));
  KeepOnlyTagCondition(blob);
  return absl::OkStatus();
}

absl::Status SetTags(HttpRequest& request, BlobRequest* blob) {
  RETURN_IF_ERROR(GetTags(request, blob));
  RETURN_IF_ERROR(ParseTagDocument(request.body(), blob));
  return ParseFencingToken(request, blob);
}

absl::Status PutBlob(HttpRequest& request, BlobRequest* blob) {
  RETURN_IF_ERROR(ParseCommonHeaders(request, /*with_metadata=*/true, blob));
  return ParsePutBlob(request, blob);
}

absl::Status SetProperties(HttpRequest& request, BlobRequest* blob) {
  RETURN_IF_ERROR(Plain(request, blob));
  return ParseBlobProperties(request, blob);
}

absl::Status SetMetadata(HttpRequest& request, BlobRequest* blob) {
  RETURN_IF_ERROR(ParseCommonHeaders(request, /*with_metadata=*/true, blob));
  return ParseFencingToken(request, blob);
}

absl::Status Fenced(HttpRequest& request, BlobRequest* blob) {
  RETURN_IF_ERROR(Plain(request, blob));
  return ParseFencingToken(request, blob);
}

constexpr BlobResource kAccount = BlobResource::kAccount;
constexpr BlobResource kContainer = BlobResource::kContainer;
constexpr BlobResource kBlob = BlobResource::kBlob;
constexpr BlobRequest::Op kNoOp = BlobRequest::OP_UNSPECIFIED;

constexpr auto kRoutes = std::to_array<BlobRoute>({
    {kAccount, http::verb::get, "list", Action::kListContainers, kNoOp, nullptr},

    {kContainer, http::verb::get, "list", Action::kListBlobs, kNoOp, nullptr},
    {kContainer, http::verb::put, "", Action::kPropose, BlobRequest::CREATE_CONTAINER,
     CreateContainer},
    {kContainer, http::verb::delete_, "", Action::kPropose, BlobRequest::DELETE_CONTAINER, Plain},
    {kContainer, http::verb::get, "", Action::kRead, BlobRequest::GET_CONTAINER_PROPERTIES, Plain},
    {kContainer, http::verb::head, "", Action::kRead, BlobRequest::GET_CONTAINER_PROPERTIES, Plain},
    {kContainer, http::verb::get, "metadata", Action::kRead, BlobRequest::GET_CONTAINER_PROPERTIES,
     Plain},
    {kContainer, http::verb::head, "metadata", Action::kRead, BlobRequest::GET_CONTAINER_PROPERTIES,
     Plain},
    {kContainer, http::verb::put, "lease", Action::kPropose, BlobRequest::LEASE_CONTAINER, Lease},

    {kBlob, http::verb::get, "tags", Action::kRead, BlobRequest::GET_BLOB_TAGS, GetTags},
    {kBlob, http::verb::put, "tags", Action::kPropose, BlobRequest::SET_BLOB_TAGS, SetTags},
    {kBlob, http::verb::put, "", Action::kPropose, BlobRequest::PUT_BLOB, PutBlob},
    {kBlob, http::verb::put, "properties", Action::kPropose, BlobRequest::SET_BLOB_PROPERTIES,
     SetProperties},
    {kBlob, http::verb::put, "metadata", Action::kPropose, BlobRequest::SET_BLOB_METADATA,
     SetMetadata},
    {kBlob, http::verb::put, "lease", Action::kPropose, BlobRequest::LEASE_BLOB, Lease},
    {kBlob, http::verb::delete_, "", Action::kPropose, BlobRequest::DELETE_BLOB, Fenced},
    {kBlob, http::verb::get, "", Action::kRead, BlobRequest::GET_BLOB, Plain},
    {kBlob, http::verb::head, "", Action::kRead, BlobRequest::GET_BLOB_PROPERTIES, Plain},
    {kBlob, http::verb::get, "metadata", Action::kRead, BlobRequest::GET_BLOB_PROPERTIES, Plain},
    {kBlob, http::verb::head, "metadata", Action::kRead, BlobRequest::GET_BLOB_PROPERTIES, Plain},
});

}  // namespace

const BlobRoute* FindBlobRoute(BlobResource resource, http::verb method, std::string_view comp) {
  for (const BlobRoute& route : kRoutes) {
    if (route.resource == resource && route.method == method && route.comp == comp) return &route;
  }
  return nullptr;
}

bool KnownComp(BlobResource resource, std::string_view comp) {
  if (comp.empty()) return true;
  switch (resource) {
    case BlobResource::kAccount:
      return comp == "list";
    // A container's listing is only a GET: comp=list with another method is an unknown query.
    case BlobResource::kContainer:
      return comp == "lease" || comp == "metadata";
    case BlobResource::kBlob:
      return comp == "lease" || comp == "metadata" || comp == "tags" || comp == "properties";
  }
  return false;
}

}  // namespace leasehold::server
