// Azure Storage SharedKey authentication for the Blob service: the request's
// `Authorization: SharedKey <account>:<signature>` must be the base64 HMAC-SHA256, under the
// account's key, of the string-to-sign Azure defines (verb, the standard headers, the x-ms-*
// headers canonicalised, and the canonicalised resource). The request date (x-ms-date, else Date)
// must be within 15 minutes of the server's clock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/http/http_server.h"

namespace leasehold::server {

// The storage emulator's public well-known account and key.
inline constexpr std::string_view kDevAccountName = "devstoreaccount1";
inline constexpr std::string_view kDevAccountKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

// How a client canonicalised a request. Azure's rules leave room for interpretation and clients
// differ; every combination is accepted (the request must match one of them exactly).
struct SigningForm {
  bool language_first = false;     // JS SDK: Content-Language before Content-Encoding
  bool skip_empty_params = false;  // JS SDK: query parameters with empty values left out
  bool culture_order = false;  // x-ms-* names in the service's (.NET en-US) order, as the JS SDK
                               // sorts them, instead of byte order
  bool collapse_whitespace =
      true;  // the spec: trim and unfold values; the JS SDK only trims the start
};

class SharedKeyVerifier {
 public:
  // `accounts` maps account names to base64 keys. InvalidArgument for a key that is not base64.
  [[nodiscard]] static absl::StatusOr<SharedKeyVerifier> Create(
      const std::map<std::string, std::string>& accounts);

  bool HasAccount(std::string_view account) const { return keys_.contains(std::string(account)); }

  // OK when the request is signed for `account` with its key. PermissionDenied otherwise, with a
  // message saying why (missing header, unknown account, stale date, signature mismatch).
  // `path` is the request target's path as sent (percent-encoded), `query` its decoded parameters.
  [[nodiscard]] absl::Status Verify(const HttpRequest& request, std::string_view account,
                                    std::string_view path,
                                    const std::multimap<std::string, std::string>& query,
                                    int64_t now_ms) const;

  // Azure's string-to-sign of `request` in `form` (exposed for tests). Before version 2015-02-21 a
  // zero Content-Length is signed as "0", from then on as empty.
  static std::string StringToSign(const HttpRequest& request, std::string_view account,
                                  std::string_view path,
                                  const std::multimap<std::string, std::string>& query,
                                  const SigningForm& form);

 private:
  absl::flat_hash_map<std::string, std::string> keys_;  // account -> decoded key bytes
};

// base64(HMAC-SHA256(key, data)).
std::string SignHmacSha256(std::string_view key, std::string_view data);

}  // namespace leasehold::server
