// Text formats of the Azure Blob adapter: RFC 1123 dates, XML escaping, the error body, and the
// lease properties as Azure spells them in headers and listings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "leasehold/internal.pb.h"

namespace leasehold::server::blobfmt {

// "Thu, 26 Jan 2012 23:30:18 GMT" for a time in milliseconds since the Unix epoch.
std::string HttpDate(int64_t unix_ms);
// Seconds since the epoch of an RFC 1123 date (the form HTTP and Azure use); nullopt if malformed.
std::optional<int64_t> ParseHttpDate(std::string_view text);
// `text` with XML's five special characters escaped.
std::string XmlEscape(std::string_view text);

// The XML body of an error answer.
std::string ErrorXml(std::string_view code, std::string_view message, std::string_view request_id,
                     int64_t now_ms);

// x-ms-lease-status ("locked"/"unlocked"), x-ms-lease-state, and x-ms-lease-duration ("infinite",
// "fixed", or empty when the lease is not held).
std::string LeaseStatus(const internalpb::BlobLease& lease);
std::string LeaseState(const internalpb::BlobLease& lease);
std::string LeaseDuration(const internalpb::BlobLease& lease);

}  // namespace leasehold::server::blobfmt
