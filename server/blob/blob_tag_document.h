// The XML document of Set Blob Tags and Get Blob Tags:
//   <?xml version="1.0" encoding="utf-8"?>
//   <Tags><TagSet><Tag><Key>k</Key><Value>v</Value></Tag>...</TagSet></Tags>
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "google/protobuf/map.h"
#include "leasehold/internal.pb.h"
#include "server/blob/blob_request_parser.h"

namespace leasehold::server {

// Fills out->tags from a Set Blob Tags body. Refuses a document that is not well-formed or not of
// exactly this shape, comments aside (400 InvalidXmlDocument); an empty <TagSet/> clears the tags.
// Refuses a tag set that breaks Azure's rules with the rule's code (400 TagsTooLarge, EmptyTagName,
// InvalidTag, DuplicateTagNames).
[[nodiscard]] absl::Status ParseTagDocument(std::string_view xml, internalpb::BlobRequest* out);

// "<TagSet>...</TagSet>" with the tags sorted by key, as Get Blob Tags and List Blobs show them.
std::string TagSetXml(const google::protobuf::Map<std::string, std::string>& tags);

// The whole Get Blob Tags body.
std::string TagDocument(const google::protobuf::Map<std::string, std::string>& tags);

}  // namespace leasehold::server
