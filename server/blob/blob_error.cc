#include "server/blob/blob_error.h"

#include <string_view>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace leasehold::server {
namespace {

constexpr char kPayloadType[] = "type.leasehold.dev/BlobError";
// Separates the payload's fields; Azure's codes, messages and detail values never hold it.
constexpr char kSeparator = '\0';

absl::StatusCode CodeForHttpStatus(int status) {
  switch (status) {
    case 304:
    case 412:
      return absl::StatusCode::kFailedPrecondition;
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 409:
      return absl::StatusCode::kAlreadyExists;
    case 413:
      return absl::StatusCode::kResourceExhausted;
    case 416:
      return absl::StatusCode::kOutOfRange;
    case 503:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

BlobError::operator absl::Status() const {
  absl::Status st(CodeForHttpStatus(status), message);
  std::string payload =
      absl::StrCat(status, std::string(1, kSeparator), code, std::string(1, kSeparator), message);
  for (const auto& [name, value] : details) {
    absl::StrAppend(&payload, std::string(1, kSeparator), name, std::string(1, kSeparator), value);
  }
  st.SetPayload(kPayloadType, absl::Cord(payload));
  return st;
}

BlobError BlobErrorOf(const absl::Status& status) {
  auto payload = status.GetPayload(kPayloadType);
  BlobError error;
  std::vector<std::string> fields;
  if (payload) fields = absl::StrSplit(std::string(*payload), kSeparator);
  if (fields.size() < 3 || fields.size() % 2 == 0 || !absl::SimpleAtoi(fields[0], &error.status)) {
    return BlobError{500, "InternalError", std::string(status.message()), {}};
  }
  error.code = fields[1];
  error.message = fields[2];
  for (size_t i = 3; i + 1 < fields.size(); i += 2)
    error.details.emplace_back(fields[i], fields[i + 1]);
  return error;
}

}  // namespace leasehold::server
