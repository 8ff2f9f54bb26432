#include "server/blob/blob_request_parser.h"

#include <algorithm>

#include <openssl/evp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "server/blob/blob_format.h"
#include "server/blob/guid.h"
#include "storage/blob/blob_tags.h"

namespace leasehold::server {
namespace {

std::optional<std::string> PercentDecode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    int value = 0;
    for (size_t j = i + 1; j <= i + 2; ++j) {
      const char c = in[j];
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= c - '0';
      else if (c >= 'a' && c <= 'f')
        value |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        value |= c - 'A' + 10;
      else
        return std::nullopt;
    }
    out.push_back(static_cast<char>(value));
    i += 2;
  }
  return out;
}

std::optional<std::string> LeaseIdHeader(const HttpRequest& request, const std::string& name,
                                         BlobError* error) {
  const std::string value = Header(request, name);
  if (value.empty()) return std::string();
  absl::string_view trimmed = absl::StripAsciiWhitespace(value);
  auto canonical = CanonicalGuid(std::string_view(trimmed.data(), trimmed.size()));
  if (!canonical) {
    *error = BadHeader(name, value);
    return std::nullopt;
  }
  return canonical;
}

// A base64 MD5 header: `digest` gets its 16 bytes, or stays empty when the header is absent.
absl::Status Md5Header(const HttpRequest& request, const char* name, std::string* digest) {
  const std::string value = Header(request, name);
  if (value.empty()) return absl::OkStatus();
  if (!absl::Base64Unescape(value, digest) || digest->size() != 16) return BadHeader(name, value);
  return absl::OkStatus();
}

void ParseTags(const std::string& value, google::protobuf::RepeatedPtrField<std::string>* out) {
  for (absl::string_view tag : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
    out->Add(std::string(absl::StripAsciiWhitespace(tag)));
  }
}

}  // namespace

std::string BlobTarget::Param(const std::string& name) const {
  auto it = query.find(name);
  return it == query.end() ? std::string() : it->second;
}

std::optional<BlobTarget> ParseBlobTarget(std::string_view target) {
  BlobTarget out;
  const size_t question = target.find('?');
  out.raw_path = std::string(target.substr(0, question));
  if (out.raw_path.empty() || out.raw_path[0] != '/') return std::nullopt;
  if (question != std::string_view::npos) {
    const std::string query(target.substr(question + 1));
    for (absl::string_view piece : absl::StrSplit(query, '&', absl::SkipEmpty())) {
      const std::string_view pair(piece.data(), piece.size());
      const size_t eq = pair.find('=');
      auto name = PercentDecode(pair.substr(0, eq));
      auto value = PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
      if (!name || !value) return std::nullopt;
      out.query.emplace(absl::AsciiStrToLower(*name), std::move(*value));
    }
  }
  std::string_view path = std::string_view(out.raw_path).substr(1);
  const size_t first = path.find('/');
  auto account = PercentDecode(path.substr(0, first));
  if (!account || account->empty()) return std::nullopt;
  out.account = std::move(*account);
  if (first == std::string_view::npos) return out;
  path = path.substr(first + 1);
  const size_t second = path.find('/');
  auto container = PercentDecode(path.substr(0, second));
  if (!container) return std::nullopt;
  out.container = std::move(*container);
  if (second == std::string_view::npos) return out;
  auto blob = PercentDecode(path.substr(second + 1));
  if (!blob) return std::nullopt;
  out.blob = std::move(*blob);
  return out;
}

BlobError MissingHeader(const std::string& name) {
  return BlobError{400,
                   "MissingRequiredHeader",
                   "An HTTP header that's mandatory for this request is not specified.",
                   {{"HeaderName", name}}};
}

BlobError BadHeader(const std::string& name, const std::string& value) {
  return BlobError{400,
                   "InvalidHeaderValue",
                   "The value for one of the HTTP headers is not in the correct format.",
                   {{"HeaderName", name}, {"HeaderValue", value}}};
}

std::string Header(const HttpRequest& request, std::string_view name) {
  auto it = request.find(boost::beast::string_view(name.data(), name.size()));
  return it == request.end() ? std::string() : std::string(it->value());
}

absl::Status ParseCommonHeaders(const HttpRequest& request, bool with_metadata,
                                internalpb::BlobRequest* out) {
  BlobError error;
  auto lease_id = LeaseIdHeader(request, "x-ms-lease-id", &error);
  if (!lease_id) return error;
  out->set_lease_id(*lease_id);
  auto* conditions = out->mutable_conditions();
  ParseTags(Header(request, "If-Match"), conditions->mutable_if_match());
  ParseTags(Header(request, "If-None-Match"), conditions->mutable_if_none_match());
  // Like HTTP, an unparseable date condition is ignored.
  if (auto t = blobfmt::ParseHttpDate(Header(request, "If-Modified-Since")))
    conditions->set_if_modified_since_s(*t);
  if (auto t = blobfmt::ParseHttpDate(Header(request, "If-Unmodified-Since"))) {
    conditions->set_if_unmodified_since_s(*t);
  }
  if (with_metadata) {
    for (const auto& field : request) {
      const std::string name(field.name_string());
      if (name.size() <= 9 || !absl::StartsWithIgnoreCase(name, "x-ms-meta-")) continue;
      const std::string key = name.substr(10);
      // Metadata names must be valid C# identifiers.
      const bool valid = !key.empty() && (absl::ascii_isalpha(key[0]) || key[0] == '_') &&
                         std::all_of(key.begin(), key.end(),
                                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
      if (!valid)
        return BlobError{
            400,
            "InvalidMetadata",
            "The metadata specified is invalid. It has characters that are not permitted.",
            {}};
      (*out->mutable_metadata())[key] =
          std::string(absl::StripAsciiWhitespace(std::string(field.value())));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseTagCondition(const HttpRequest& request, internalpb::BlobRequest* out) {
  std::string if_tags = Header(request, "x-ms-if-tags");
  if (if_tags.empty()) return absl::OkStatus();
  if (!storage::TagCondition::Parse(if_tags)) return BadHeader("x-ms-if-tags", if_tags);
  out->mutable_conditions()->set_if_tags(std::move(if_tags));
  return absl::OkStatus();
}

absl::Status ParseLeaseHeaders(const HttpRequest& request, internalpb::BlobRequest* out) {
  using Request = internalpb::BlobRequest;
  const std::string action = absl::AsciiStrToLower(Header(request, "x-ms-lease-action"));
  if (action.empty()) return MissingHeader("x-ms-lease-action");
  static const std::map<std::string, Request::LeaseAction> kActions = {
      {"acquire", Request::ACQUIRE},
      {"renew", Request::RENEW},
      {"change", Request::CHANGE},
      {"release", Request::RELEASE},
      {"break", Request::BREAK}};
  auto it = kActions.find(action);
  if (it == kActions.end())
    return BadHeader("x-ms-lease-action", Header(request, "x-ms-lease-action"));
  out->set_action(it->second);

  BlobError error;
  auto proposed = LeaseIdHeader(request, "x-ms-proposed-lease-id", &error);
  if (!proposed) return error;
  out->set_proposed_lease_id(*proposed);

  // "Only allowed and required on an acquire operation": a duration cannot be changed by any
  // other action, so one given with it is refused rather than silently ignored.
  if (out->action() != Request::ACQUIRE && request.find("x-ms-lease-duration") != request.end())
    return BadHeader("x-ms-lease-duration", Header(request, "x-ms-lease-duration"));
  switch (out->action()) {
    case Request::ACQUIRE: {
      const std::string duration = Header(request, "x-ms-lease-duration");
      if (duration.empty()) return MissingHeader("x-ms-lease-duration");
      int64_t seconds = 0;
      if (!absl::SimpleAtoi(duration, &seconds) ||
          (seconds != -1 && (seconds < 15 || seconds > 60))) {
        return BadHeader("x-ms-lease-duration", duration);
      }
      out->set_duration_s(seconds);
      out->set_generated_lease_id(NewGuid());
      break;
    }
    case Request::CHANGE:
      if (out->proposed_lease_id().empty()) return MissingHeader("x-ms-proposed-lease-id");
      [[fallthrough]];
    case Request::RENEW:
    case Request::RELEASE:
      if (out->lease_id().empty()) return MissingHeader("x-ms-lease-id");
      break;
    case Request::BREAK: {
      const std::string period = Header(request, "x-ms-lease-break-period");
      if (!period.empty()) {
        int64_t seconds = 0;
        if (!absl::SimpleAtoi(period, &seconds) || seconds < 0 || seconds > 60) {
          return BadHeader("x-ms-lease-break-period", period);
        }
        out->set_has_break_period(true);
        out->set_break_period_s(seconds);
      }
      break;
    }
    default:
      break;
  }
  return absl::OkStatus();
}

absl::Status ParseFencingToken(const HttpRequest& request, internalpb::BlobRequest* out) {
  const std::string token = Header(request, "x-leasehold-if-fencing-token");
  if (token.empty()) return absl::OkStatus();
  int64_t value = 0;
  if (!absl::SimpleAtoi(token, &value) || value <= 0)
    return BadHeader("x-leasehold-if-fencing-token", token);
  out->set_if_fencing_token(value);
  return absl::OkStatus();
}

absl::Status ParsePutBlob(HttpRequest& request, internalpb::BlobRequest* out) {
  const std::string type = Header(request, "x-ms-blob-type");
  if (type.empty()) return MissingHeader("x-ms-blob-type");
  if (type != "BlockBlob") {
    return BlobError{400,
                     "InvalidHeaderValue",
                     "Only block blobs are supported by this service.",
                     {{"HeaderName", "x-ms-blob-type"}, {"HeaderValue", type}}};
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_length = 0;
  EVP_Digest(request.body().data(), request.body().size(), digest, &digest_length, EVP_md5(),
             nullptr);
  const std::string md5(reinterpret_cast<const char*>(digest), digest_length);
  std::string given;
  if (absl::Status error = Md5Header(request, "Content-MD5", &given); !error.ok()) return error;
  if (!given.empty() && given != md5) {
    return BlobError{400,
                     "Md5Mismatch",
                     "The MD5 value specified in the request did not match with the MD5 value "
                     "calculated by the server.",
                     {}};
  }
  auto* p = out->mutable_properties();
  auto either = [&](const char* ms, const char* standard) {
    std::string v = Header(request, ms);
    return v.empty() ? Header(request, standard) : v;
  };
  p->set_content_type(either("x-ms-blob-content-type", "Content-Type"));
  if (p->content_type().empty()) p->set_content_type("application/octet-stream");
  p->set_content_encoding(either("x-ms-blob-content-encoding", "Content-Encoding"));
  p->set_content_language(either("x-ms-blob-content-language", "Content-Language"));
  p->set_cache_control(either("x-ms-blob-cache-control", "Cache-Control"));
  p->set_content_disposition(either("x-ms-blob-content-disposition", "Content-Disposition"));
  std::string blob_md5;
  if (absl::Status error = Md5Header(request, "x-ms-blob-content-md5", &blob_md5); !error.ok())
    return error;
  p->set_content_md5(blob_md5.empty() ? md5 : blob_md5);
  if (absl::Status error = ParseTagsHeader(request, out); !error.ok()) return error;
  out->set_content(std::move(request.body()));
  return ParseFencingToken(request, out);
}

absl::Status ParseBlobProperties(const HttpRequest& request, internalpb::BlobRequest* out) {
  auto* p = out->mutable_properties();
  p->set_content_type(Header(request, "x-ms-blob-content-type"));
  p->set_content_encoding(Header(request, "x-ms-blob-content-encoding"));
  p->set_content_language(Header(request, "x-ms-blob-content-language"));
  p->set_cache_control(Header(request, "x-ms-blob-cache-control"));
  p->set_content_disposition(Header(request, "x-ms-blob-content-disposition"));
  if (absl::Status error = Md5Header(request, "x-ms-blob-content-md5", p->mutable_content_md5());
      !error.ok())
    return error;
  return ParseFencingToken(request, out);
}

absl::Status ParseTagsHeader(const HttpRequest& request, internalpb::BlobRequest* out) {
  const std::string value = Header(request, "x-ms-tags");
  std::vector<std::pair<std::string, std::string>> tags;
  for (absl::string_view piece : absl::StrSplit(value, '&', absl::SkipEmpty())) {
    std::string pair(piece);
    std::replace(pair.begin(), pair.end(), '+', ' ');  // form encoding's space
    const size_t eq = pair.find('=');
    auto key = PercentDecode(std::string_view(pair).substr(0, eq));
    auto tag_value = PercentDecode(eq == std::string::npos ? std::string_view()
                                                           : std::string_view(pair).substr(eq + 1));
    if (!key || !tag_value) return BadHeader("x-ms-tags", value);
    tags.emplace_back(std::move(*key), std::move(*tag_value));
  }
  return SetTags(std::move(tags), out);
}

absl::Status SetTags(std::vector<std::pair<std::string, std::string>> tags,
                     internalpb::BlobRequest* out) {
  if (auto problem = storage::CheckTagSet(tags))
    return BlobError{400, problem->code, problem->message, {}};
  for (auto& [key, value] : tags) (*out->mutable_tags())[std::move(key)] = std::move(value);
  return absl::OkStatus();
}

}  // namespace leasehold::server
