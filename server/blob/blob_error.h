// Azure's error answers as absl::Status, the one error convention of the code base: a BlobError
// (HTTP status, x-ms-error-code, message and extra XML elements) converts to a Status whose code
// follows the HTTP status and whose payload keeps the BlobError whole, and BlobErrorOf reads it
// back where the answer is written (blob_service.cc).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace leasehold::server {

struct BlobError {
  int status = 400;
  std::string code;
  std::string message;
  std::vector<std::pair<std::string, std::string>> details;  // <Name>value</Name> after Message

  // Implicit on purpose: parsers write `return BlobError{...};` where a Status is returned.
  operator absl::Status() const;  // NOLINT(google-explicit-constructor)
};

// The BlobError `status` carries; one that carries none (not made from a BlobError) is a 500
// InternalError with the status's message.
BlobError BlobErrorOf(const absl::Status& status);

}  // namespace leasehold::server
