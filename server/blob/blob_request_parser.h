// Turns an Azure Blob HTTP request into a BlobRequest: which resource and operation it names, and
// every header the outcome depends on, validated (lease ids as GUIDs in canonical form, durations,
// break periods, dates, metadata). Refusals carry Azure's status and error code.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "leasehold/internal.pb.h"
#include "server/blob/blob_error.h"
#include "server/http/http_server.h"

namespace leasehold::server {

// The request target, split and percent-decoded.
struct BlobTarget {
  std::string raw_path;  // as sent, for the signature
  std::string account;
  std::string container;  // empty: the account itself
  std::string blob;       // empty: the container itself
  std::multimap<std::string, std::string> query;

  std::string Param(const std::string& name) const;
  bool Has(const std::string& name) const { return query.count(name) > 0; }
};

// nullopt for a target that is not /account[/container[/blob]][?query] with valid escapes.
std::optional<BlobTarget> ParseBlobTarget(std::string_view target);

// Azure's error for a header missing or with a bad value.
BlobError MissingHeader(const std::string& name);
BlobError BadHeader(const std::string& name, const std::string& value);

// Header value, or empty.
std::string Header(const HttpRequest& request, std::string_view name);

// Fills `out` with the lease id (x-ms-lease-id), the HTTP conditions and, when `with_metadata`, the
// x-ms-meta-* headers. Returns the refusal (a BlobError) for a malformed value; the other
// parsers likewise.
[[nodiscard]] absl::Status ParseCommonHeaders(const HttpRequest& request, bool with_metadata,
                                              internalpb::BlobRequest* out);
// x-ms-if-tags, on blob operations (the service ignores it on containers). A malformed expression
// is refused even when the blob does not exist, as the service reads the header first.
[[nodiscard]] absl::Status ParseTagCondition(const HttpRequest& request,
                                             internalpb::BlobRequest* out);
// Fills the lease action fields of a Lease Blob / Lease Container request.
[[nodiscard]] absl::Status ParseLeaseHeaders(const HttpRequest& request,
                                             internalpb::BlobRequest* out);
// Fills the content, properties, tags (x-ms-tags) and (x-leasehold-if-fencing-token) of a Put Blob
// request.
[[nodiscard]] absl::Status ParsePutBlob(HttpRequest& request, internalpb::BlobRequest* out);
// Set Blob Properties: the six x-ms-blob-* properties; one not sent is cleared, as the service
// does.
[[nodiscard]] absl::Status ParseBlobProperties(const HttpRequest& request,
                                               internalpb::BlobRequest* out);
// x-ms-tags: a form-encoded "k1=v1&k2=v2", held to the rules of Set Blob Tags.
[[nodiscard]] absl::Status ParseTagsHeader(const HttpRequest& request,
                                           internalpb::BlobRequest* out);
// Sets out->tags to `tags` (in the order sent) if they meet Azure's tag rules; else the rule's 400.
[[nodiscard]] absl::Status SetTags(std::vector<std::pair<std::string, std::string>> tags,
                                   internalpb::BlobRequest* out);
// x-leasehold-if-fencing-token on writes.
[[nodiscard]] absl::Status ParseFencingToken(const HttpRequest& request,
                                             internalpb::BlobRequest* out);

}  // namespace leasehold::server
