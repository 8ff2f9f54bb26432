// Which Azure Blob operation a request names, as a table: the REST API picks it from the resource
// (the account, a container or a blob), the method and ?comp=. Each route says what the operation
// reads from the request and whether it is proposed through the log or read locally.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "boost/beast/http/verb.hpp"
#include "leasehold/internal.pb.h"
#include "server/http/http_server.h"

namespace leasehold::server {

enum class BlobResource { kAccount, kContainer, kBlob };

struct BlobRoute {
  enum class Action {
    kPropose,         // a BlobRequest through the log
    kRead,            // a BlobRequest answered from local state after a read barrier
    kListContainers,  // the account's listing
    kListBlobs,       // a container's listing
  };
  BlobResource resource;
  boost::beast::http::verb method;
  std::string_view comp;  // ?comp=, empty for none
  Action action;
  internalpb::BlobRequest::Op op;  // for kPropose and kRead
  // Reads the operation's headers (and body) into `blob`: OK, or Azure's refusal (a BlobError).
  // Null for the listings, which read the query instead.
  absl::Status (*parse)(HttpRequest& request, internalpb::BlobRequest* blob);
};

// The route for `method` and `comp` on `resource`, or null: then the request is refused with
// 400 InvalidQueryParameterValue when `comp` is not one the resource knows (KnownComp), else with
// 405 UnsupportedHttpVerb.
const BlobRoute* FindBlobRoute(BlobResource resource, boost::beast::http::verb method,
                               std::string_view comp);
bool KnownComp(BlobResource resource, std::string_view comp);

}  // namespace leasehold::server
