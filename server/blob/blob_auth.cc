#include "server/blob/blob_auth.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/blob/blob_format.h"

namespace leasehold::server {
namespace {

namespace http = boost::beast::http;

constexpr int64_t kMaxClockSkewMs = 15 * 60 * 1000;

std::string HeaderOrEmpty(const HttpRequest& request, std::string_view name) {
  auto it = request.find(boost::beast::string_view(name.data(), name.size()));
  return it == request.end() ? std::string() : std::string(it->value());
}

// Unfolds and trims a header value as the canonicalisation asks (runs of whitespace become one
// space).
std::string CanonicalValue(std::string_view value) {
  std::string out;
  bool space = false;
  for (char c : absl::StripAsciiWhitespace(absl::string_view(value.data(), value.size()))) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      space = true;
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

std::string TrimStart(std::string_view value) {
  size_t i = 0;
  while (i < value.size() && (value[i] == ' ' || value[i] == '\t')) ++i;
  return std::string(value.substr(i));
}

// The storage service orders x-ms-* names as .NET's en-US culture compares strings: first by
// "primary weight", where hyphens and apostrophes are ignored, punctuation sorts before digits and
// digits before letters (so "_" precedes "1", unlike in byte order); equal primaries fall back to
// byte order.
int PrimaryWeight(char c) {
  if (c >= 'a' && c <= 'z') return 400 + (c - 'a');
  if (c >= 'A' && c <= 'Z') return 400 + (c - 'A');
  if (c >= '0' && c <= '9') return 300 + (c - '0');
  if (c == '-' || c == '\'') return 0;  // ignorable
  if (c == '+') return 299;             // after the other punctuation
  return 1 + static_cast<unsigned char>(c);
}

bool CultureLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (true) {
    while (i < a.size() && PrimaryWeight(a[i]) == 0) ++i;
    while (j < b.size() && PrimaryWeight(b[j]) == 0) ++j;
    if (i == a.size() || j == b.size()) {
      if (i == a.size() && j == b.size()) return a < b;
      return i == a.size();
    }
    const int wa = PrimaryWeight(a[i]), wb = PrimaryWeight(b[j]);
    if (wa != wb) return wa < wb;
    ++i;
    ++j;
  }
}

}  // namespace

std::string SignHmacSha256(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &length);
  return absl::Base64Escape(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

absl::StatusOr<SharedKeyVerifier> SharedKeyVerifier::Create(
    const std::map<std::string, std::string>& accounts) {
  SharedKeyVerifier verifier;
  for (const auto& [name, key] : accounts) {
    std::string decoded;
    if (!absl::Base64Unescape(key, &decoded) || decoded.empty()) {
      return absl::InvalidArgumentError("the key of account " + name + " is not base64");
    }
    verifier.keys_[name] = std::move(decoded);
  }
  return verifier;
}

std::string SharedKeyVerifier::StringToSign(const HttpRequest& request, std::string_view account,
                                            std::string_view path,
                                            const std::multimap<std::string, std::string>& query,
                                            const SigningForm& form) {
  std::string content_length = HeaderOrEmpty(request, "Content-Length");
  if (content_length == "0" && HeaderOrEmpty(request, "x-ms-version") >= "2015-02-21")
    content_length.clear();
  std::string out = absl::StrCat(std::string(request.method_string()), "\n");
  const std::string encoding = HeaderOrEmpty(request, "Content-Encoding");
  const std::string language = HeaderOrEmpty(request, "Content-Language");
  absl::StrAppend(&out, form.language_first ? language : encoding, "\n",
                  form.language_first ? encoding : language, "\n");
  absl::StrAppend(&out, content_length, "\n");
  for (std::string_view name : {"Content-MD5", "Content-Type", "Date", "If-Modified-Since",
                                "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"}) {
    absl::StrAppend(&out, HeaderOrEmpty(request, name), "\n");
  }
  // Canonicalised headers: every x-ms-* header, lower-cased and sorted.
  std::vector<std::pair<std::string, std::string>> ms_headers;
  for (const auto& field : request) {
    std::string name = absl::AsciiStrToLower(std::string(field.name_string()));
    if (name.rfind("x-ms-", 0) != 0) continue;
    const std::string_view value(field.value().data(), field.value().size());
    ms_headers.emplace_back(std::move(name),
                            form.collapse_whitespace ? CanonicalValue(value) : TrimStart(value));
  }
  std::stable_sort(ms_headers.begin(), ms_headers.end(), [&](const auto& a, const auto& b) {
    return form.culture_order ? CultureLess(a.first, b.first) : a.first < b.first;
  });
  for (const auto& [name, value] : ms_headers) absl::StrAppend(&out, name, ":", value, "\n");
  // Canonicalised resource: /account + the path as sent, then each query parameter (lower-cased
  // name, sorted; a repeated name signs its last value).
  absl::StrAppend(&out, "/", std::string(account), std::string(path));
  std::map<std::string, std::string> params;
  for (const auto& [name, value] : query) {
    if (!(form.skip_empty_params && value.empty())) params[absl::AsciiStrToLower(name)] = value;
  }
  for (const auto& [name, value] : params) absl::StrAppend(&out, "\n", name, ":", value);
  return out;
}

absl::Status SharedKeyVerifier::Verify(const HttpRequest& request, std::string_view account,
                                       std::string_view path,
                                       const std::multimap<std::string, std::string>& query,
                                       int64_t now_ms) const {
  const std::string authorization = HeaderOrEmpty(request, "Authorization");
  if (authorization.empty())
    return absl::PermissionDeniedError("The Authorization header is missing.");
  constexpr std::string_view kScheme = "SharedKey ";
  if (authorization.rfind(kScheme, 0) != 0) {
    return absl::PermissionDeniedError("Only the SharedKey authorization scheme is supported.");
  }
  const std::string_view credential = std::string_view(authorization).substr(kScheme.size());
  const size_t colon = credential.find(':');
  if (colon == std::string_view::npos)
    return absl::PermissionDeniedError("The Authorization header is malformed.");
  const std::string_view signer = credential.substr(0, colon);
  if (signer != account) {
    return absl::PermissionDeniedError(
        "The account in the Authorization header is not the account addressed.");
  }
  auto key = keys_.find(std::string(account));
  if (key == keys_.end()) return absl::PermissionDeniedError("Unknown account.");

  std::string date = HeaderOrEmpty(request, "x-ms-date");
  if (date.empty()) date = HeaderOrEmpty(request, "Date");
  if (date.empty())
    return absl::PermissionDeniedError("The request has neither x-ms-date nor Date.");
  auto seconds = blobfmt::ParseHttpDate(date);
  if (!seconds) return absl::PermissionDeniedError("The request date is not an RFC 1123 date.");
  if (std::llabs(*seconds * 1000 - now_ms) > kMaxClockSkewMs) {
    return absl::PermissionDeniedError("Request date header too old or too far in the future.");
  }
  const std::string_view given = credential.substr(colon + 1);
  std::vector<std::string> tried;
  for (int bits = 0; bits < 16; ++bits) {
    const SigningForm form{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0, (bits & 8) == 0};
    std::string to_sign = StringToSign(request, account, path, query, form);
    if (std::find(tried.begin(), tried.end(), to_sign) != tried.end()) continue;
    const std::string expected = SignHmacSha256(key->second, to_sign);
    if (given.size() == expected.size() &&
        CRYPTO_memcmp(given.data(), expected.data(), expected.size()) == 0) {
      return absl::OkStatus();
    }
    tried.push_back(std::move(to_sign));
  }
  return absl::PermissionDeniedError(
      "Server failed to authenticate the request. Make sure the value of Authorization header is "
      "formed "
      "correctly including the signature.");
}

}  // namespace leasehold::server
