#include "server/blob/blob_service.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/blob/blob_format.h"
#include "server/blob/blob_request_parser.h"
#include "server/blob/blob_routes.h"
#include "server/blob/blob_tag_document.h"
#include "server/blob/guid.h"
#include "server/observability/metrics.h"

namespace leasehold::server {

namespace http = boost::beast::http;
using internalpb::BlobRecord;
using internalpb::BlobRequest;
using internalpb::BlobResponse;

namespace {

// The version answered when a request names none, and the oldest accepted (the lease rules
// implemented are those from 2012-02-12 on).
constexpr std::string_view kDefaultVersion = "2021-08-06";
constexpr std::string_view kOldestVersion = "2012-02-12";

bool ValidVersion(std::string_view v) {
  if (v.size() != 10 || v[4] != '-' || v[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!absl::ascii_isdigit(v[i])) return false;
  }
  return v >= kOldestVersion;
}

// Azure's container naming rules: 3-63 characters of lower-case letters, digits and single
// hyphens, starting and ending with a letter or digit.
bool ValidContainerName(std::string_view name) {
  if (name == "$root") return true;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '-') {
      if (i == 0 || i + 1 == name.size() || name[i - 1] == '-') return false;
    } else if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c)) {
      return false;
    }
  }
  return true;
}

bool ValidBlobName(std::string_view name) { return !name.empty() && name.size() <= 1024; }

BlobError InvalidResourceName() {
  return BlobError{
      400, "InvalidResourceName", "The specifed resource name contains invalid characters.", {}};
}
BlobError UnsupportedOperation() {
  return BlobError{400,
                   "InvalidQueryParameterValue",
                   "Value for one of the query parameters specified in the request URI is invalid.",
                   {}};
}
BlobError VerbNotSupported() {
  return BlobError{
      405, "UnsupportedHttpVerb", "The resource doesn't support specified Http Verb.", {}};
}

// Leasehold keeps one version of each blob: a request for a snapshot or an older version names
// something that is not here, and is refused rather than answered from the current blob.
BlobError NoSnapshots(const std::string& parameter, const std::string& value) {
  return BlobError{400,
                   "InvalidQueryParameterValue",
                   "Blob snapshots and versions are not supported by this server.",
                   {{"QueryParameterName", parameter}, {"QueryParameterValue", value}}};
}

}  // namespace

struct BlobService::Call {
  std::function<void(HttpResponse)> respond;
  std::string request_id = NewGuid();
  std::string version;
  std::string client_request_id;
  bool head = false;
  int64_t now_ms = 0;
  std::string range;  // Get Blob: Range or x-ms-range
  std::string account;

  HttpResponse Base(int status) const {
    HttpResponse response{static_cast<http::status>(status), 11};
    response.set(http::field::server, "Leasehold-Blob/1.0");
    response.set("x-ms-request-id", request_id);
    response.set("x-ms-version", version);
    response.set(http::field::date, blobfmt::HttpDate(Member::NowUnixMs()));
    if (!client_request_id.empty()) response.set("x-ms-client-request-id", client_request_id);
    return response;
  }

  void Fail(const absl::Status& error) const { Fail(BlobErrorOf(error)); }
  void Fail(const BlobError& error) const {
    HttpResponse response = Base(error.status);
    response.set("x-ms-error-code", error.code);
    if (!head && error.status != 304) {
      std::string body =
          blobfmt::ErrorXml(error.code, error.message, request_id, Member::NowUnixMs());
      if (!error.details.empty()) {
        std::string extra;
        for (const auto& [name, value] : error.details) {
          absl::StrAppend(&extra, "<", name, ">", blobfmt::XmlEscape(value), "</", name, ">");
        }
        body.insert(body.size() - std::string_view("</Error>").size(), extra);
      }
      response.set(http::field::content_type, "application/xml");
      response.body() = std::move(body);
    }
    respond(std::move(response));
  }
};

HttpResponse BlobService::TooLarge(const HttpRequest& request) const {
  Call call;
  call.version = std::string(request["x-ms-version"]);
  if (call.version.empty()) call.version = kDefaultVersion;
  HttpResponse response;
  call.respond = [&response](HttpResponse r) { response = std::move(r); };
  call.Fail(BlobError{413,
                      "RequestBodyTooLarge",
                      "The request body is too large and exceeds the maximum permissible limit.",
                      {{"MaxLimit", std::to_string(options_.max_blob_bytes)}}});
  return response;
}

void BlobService::Handle(HttpRequest&& request, HttpServer::Respond respond) {
  auto call = std::make_shared<Call>();
  call->respond = [respond = std::move(respond)](HttpResponse response) {
    Metrics::Get().CountBlobAnswer(static_cast<int>(response.result_int()));
    respond(std::move(response));
  };
  call->now_ms = Member::NowUnixMs();
  call->head = request.method() == http::verb::head;
  call->client_request_id = Header(request, "x-ms-client-request-id").substr(0, 1024);
  call->version = Header(request, "x-ms-version");
  if (call->version.empty()) call->version = kDefaultVersion;
  if (!ValidVersion(call->version)) {
    const std::string given = call->version;
    call->version = kDefaultVersion;
    call->Fail(BlobError{400,
                         "InvalidHeaderValue",
                         "The API version " + given + " is not supported; use 2012-02-12 or later.",
                         {{"HeaderName", "x-ms-version"}, {"HeaderValue", given}}});
    return;
  }
  auto target = ParseBlobTarget(std::string_view(request.target().data(), request.target().size()));
  if (!target) {
    call->Fail(BlobError{
        400, "InvalidUri", "The requested URI does not represent any resource on the server.", {}});
    return;
  }
  call->account = target->account;
  if (!verifier_.HasAccount(target->account)) {
    call->Fail(BlobError{
        403, "AuthenticationFailed", "The account in the URL is not known to this server.", {}});
    return;
  }
  if (absl::Status auth =
          verifier_.Verify(request, target->account, target->raw_path, target->query, call->now_ms);
      !auth.ok()) {
    call->Fail(BlobError{403, "AuthenticationFailed", std::string(auth.message()), {}});
    return;
  }
  Dispatch(std::move(call), request, *target);
}

void BlobService::Dispatch(std::shared_ptr<Call> call, HttpRequest& request,
                           const BlobTarget& target) {
  const std::string comp = target.Param("comp");
  auto fail = [&](const absl::Status& error) { call->Fail(error); };

  BlobResource resource = BlobResource::kAccount;
  if (!target.container.empty()) {
    if (target.container.size() < 3 || target.container.size() > 63) {
      return fail(
          BlobError{400,
                    "OutOfRangeInput",
                    "The specified resource name length is not within the permissible limits.",
                    {}});
    }
    if (!ValidContainerName(target.container)) return fail(InvalidResourceName());
    resource = BlobResource::kContainer;
    if (target.blob.empty()) {
      if (target.Param("restype") != "container") return fail(UnsupportedOperation());
    } else {
      if (!ValidBlobName(target.blob)) return fail(InvalidResourceName());
      resource = BlobResource::kBlob;
    }
  }
  const BlobRoute* route = FindBlobRoute(resource, request.method(), comp);
  if (route == nullptr && !KnownComp(resource, comp)) return fail(UnsupportedOperation());

  BlobRequest blob;
  blob.set_container(target.container);
  blob.set_blob(target.blob);
  if (resource == BlobResource::kBlob) {
    // Read first, whatever the operation, as the service reads them.
    for (const char* version : {"snapshot", "versionid"}) {
      if (target.Has(version)) return fail(NoSnapshots(version, target.Param(version)));
    }
    if (absl::Status st = ParseTagCondition(request, &blob); !st.ok()) return fail(st);
  }
  if (route == nullptr) return fail(VerbNotSupported());

  switch (route->action) {
    case BlobRoute::Action::kListContainers:
      return ListContainers(call, target);
    case BlobRoute::Action::kListBlobs:
      return ListBlobs(call, target);
    case BlobRoute::Action::kPropose:
    case BlobRoute::Action::kRead:
      break;
  }
  if (absl::Status st = route->parse(request, &blob); !st.ok()) return fail(st);
  blob.set_op(route->op);
  // A lease action may grant a core lease (the Azure lease's timer): its id is drawn here, so that
  // applying the entry reads no generator.
  if (route->op == BlobRequest::LEASE_BLOB || route->op == BlobRequest::LEASE_CONTAINER) {
    blob.set_core_lease_id(member_->NextId());
  }
  if (route->op == BlobRequest::GET_BLOB || route->op == BlobRequest::GET_BLOB_PROPERTIES) {
    call->range = Header(request, "x-ms-range");
    if (call->range.empty()) call->range = Header(request, "Range");
  }
  if (route->action == BlobRoute::Action::kPropose) return Propose(call, std::move(blob));
  return Read(call, std::move(blob));
}

namespace {

void SetStamp(const BlobResponse& result, HttpResponse* response) {
  response->set(http::field::etag, storage::BlobETag(result.etag_revision()));
  response->set(http::field::last_modified, blobfmt::HttpDate(result.last_modified_ms()));
}

void SetLeaseHeaders(const internalpb::BlobLease& lease, HttpResponse* response) {
  response->set("x-ms-lease-status", blobfmt::LeaseStatus(lease));
  response->set("x-ms-lease-state", blobfmt::LeaseState(lease));
  if (std::string d = blobfmt::LeaseDuration(lease); !d.empty())
    response->set("x-ms-lease-duration", d);
}

void SetMetadataHeaders(const BlobRecord& record, HttpResponse* response) {
  std::vector<std::pair<std::string, std::string>> sorted(record.metadata().begin(),
                                                          record.metadata().end());
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [k, v] : sorted) response->set("x-ms-meta-" + k, v);
}

}  // namespace

void BlobService::Propose(std::shared_ptr<Call> call, BlobRequest blob) {
  internalpb::InternalRequest entry;
  *entry.mutable_blob() = std::move(blob);
  const BlobRequest::Op op = entry.blob().op();
  const std::string content_md5 = entry.blob().properties().content_md5();
  member_->Submit(std::move(entry), [call, op, content_md5](storage::ApplyResult applied) {
    if (!applied.status.ok()) {
      const bool timeout = absl::IsDeadlineExceeded(applied.status) ||
                           applied.status.message().find("timed out") != std::string_view::npos;
      call->Fail(timeout
                     ? BlobError{500,
                                 "OperationTimedOut",
                                 "The operation could not be completed within the permitted time.",
                                 {}}
                     : BlobError{503,
                                 "ServerBusy",
                                 "The server is currently unable to receive requests: " +
                                     std::string(applied.status.message()),
                                 {}});
      return;
    }
    const BlobResponse& result = applied.response.blob();
    if (!result.error_code().empty()) {
      call->Fail(BlobError{result.http_status(), result.error_code(), result.error_message(), {}});
      return;
    }
    HttpResponse response = call->Base(result.http_status());
    // Set Blob Tags changes neither the ETag nor the last-modified time, and answers neither.
    if (op != BlobRequest::DELETE_BLOB && op != BlobRequest::DELETE_CONTAINER &&
        op != BlobRequest::SET_BLOB_TAGS) {
      SetStamp(result, &response);
    }
    if (op == BlobRequest::DELETE_BLOB) response.set("x-ms-delete-type-permanent", "true");
    if (op == BlobRequest::PUT_BLOB || op == BlobRequest::SET_BLOB_METADATA) {
      response.set("x-ms-request-server-encrypted", "true");
    }
    if (op == BlobRequest::PUT_BLOB) response.set("Content-MD5", absl::Base64Escape(content_md5));
    if (!result.lease_id().empty()) response.set("x-ms-lease-id", result.lease_id());
    if (result.lease_time_s() >= 0 &&
        (op == BlobRequest::LEASE_BLOB || op == BlobRequest::LEASE_CONTAINER)) {
      response.set("x-ms-lease-time", std::to_string(result.lease_time_s()));
    }
    if (result.fencing_token() != 0)
      response.set("x-leasehold-fencing-token", std::to_string(result.fencing_token()));
    call->respond(std::move(response));
  });
}

void BlobService::Read(std::shared_ptr<Call> call, BlobRequest blob) {
  member_->proposer().ReadBarrier([this, call, blob = std::move(blob)](absl::Status barrier) {
    if (!barrier.ok()) {
      call->Fail(BlobError{
          503,
          "ServerBusy",
          "The server is currently unable to receive requests: " + std::string(barrier.message()),
          {}});
      return;
    }
    BlobResponse result = member_->state_machine().ReadBlob(blob, Member::NowUnixMs());
    if (!result.error_code().empty()) {
      HttpResponse response = call->Base(result.http_status());
      if (result.http_status() == 304) {
        SetStamp(result, &response);
        call->respond(std::move(response));
        return;
      }
      call->Fail(BlobError{result.http_status(), result.error_code(), result.error_message(), {}});
      return;
    }
    const BlobRecord& record = result.record();
    HttpResponse response = call->Base(200);
    if (blob.op() == BlobRequest::GET_BLOB_TAGS) {
      response.set(http::field::content_type, "application/xml");
      response.body() = TagDocument(record.tags());
      call->respond(std::move(response));
      return;
    }
    SetStamp(result, &response);
    SetMetadataHeaders(record, &response);
    SetLeaseHeaders(record.lease(), &response);
    if (blob.op() == BlobRequest::GET_CONTAINER_PROPERTIES) {
      response.set("x-ms-has-immutability-policy", "false");
      response.set("x-ms-has-legal-hold", "false");
      if (!record.public_access().empty())
        response.set("x-ms-blob-public-access", record.public_access());
      response.content_length(0);
      call->respond(std::move(response));
      return;
    }
    const auto& p = record.properties();
    response.set("x-ms-blob-type", "BlockBlob");
    response.set("x-ms-creation-time", blobfmt::HttpDate(record.created_ms()));
    response.set("x-ms-server-encrypted", "true");
    response.set("x-ms-access-tier", "Hot");
    response.set("x-ms-access-tier-inferred", "true");
    if (record.tags_size() > 0) response.set("x-ms-tag-count", std::to_string(record.tags_size()));
    response.set(http::field::accept_ranges, "bytes");
    response.set(http::field::content_type,
                 p.content_type().empty() ? "application/octet-stream" : p.content_type());
    if (!p.content_encoding().empty())
      response.set(http::field::content_encoding, p.content_encoding());
    if (!p.content_language().empty())
      response.set(http::field::content_language, p.content_language());
    if (!p.cache_control().empty()) response.set(http::field::cache_control, p.cache_control());
    if (!p.content_disposition().empty())
      response.set("Content-Disposition", p.content_disposition());
    const std::string md5 = absl::Base64Escape(p.content_md5());
    const int64_t size = record.content_length();
    if (blob.op() == BlobRequest::GET_BLOB_PROPERTIES) {
      if (!md5.empty()) response.set("Content-MD5", md5);
      response.content_length(size);
      call->respond(std::move(response));
      return;
    }
    // Get Blob, whole or a byte range ("bytes=a-b" or "bytes=a-").
    int64_t first = 0, last = size - 1;
    bool ranged = false;
    if (!call->range.empty()) {
      absl::string_view spec = call->range;
      int64_t a = -1, b = -1;
      bool parsed = false;
      if (absl::ConsumePrefix(&spec, "bytes=")) {
        std::vector<absl::string_view> parts = absl::StrSplit(spec, '-');
        parsed = parts.size() == 2 && absl::SimpleAtoi(parts[0], &a) && a >= 0 &&
                 (parts[1].empty() || (absl::SimpleAtoi(parts[1], &b) && b >= a));
      }
      if (parsed) {
        if (a >= size) {
          call->Fail(
              BlobError{416,
                        "InvalidRange",
                        "The range specified is invalid for the current size of the resource.",
                        {}});
          return;
        }
        first = a;
        last = b < 0 ? size - 1 : std::min(b, size - 1);
        ranged = true;
      }
    }
    if (ranged) {
      response.result(http::status::partial_content);
      response.set(http::field::content_range, absl::StrCat("bytes ", first, "-", last, "/", size));
      if (!md5.empty()) response.set("x-ms-blob-content-md5", md5);
    } else if (!md5.empty()) {
      response.set("Content-MD5", md5);
    }
    if (call->head) {
      response.content_length(ranged ? last - first + 1 : size);
    } else {
      response.body() = ranged ? result.content().substr(first, last - first + 1)
                               : std::move(*result.mutable_content());
    }
    call->respond(std::move(response));
  });
}

namespace {

struct ListParams {
  std::string prefix, marker, delimiter;
  int64_t max_results = 5000;
  bool metadata = false;
  bool tags = false;
};

absl::Status ParseListParams(const BlobTarget& target, ListParams* out) {
  out->prefix = target.Param("prefix");
  out->marker = target.Param("marker");
  out->delimiter = target.Param("delimiter");
  if (target.Has("maxresults")) {
    const std::string v = target.Param("maxresults");
    if (!absl::SimpleAtoi(v, &out->max_results) || out->max_results < 1) {
      return BlobError{400,
                       "OutOfRangeQueryParameterValue",
                       "One of the query parameters specified in the request URI is outside the "
                       "permissible range.",
                       {{"QueryParameterName", "maxresults"}, {"QueryParameterValue", v}}};
    }
    out->max_results = std::min<int64_t>(out->max_results, 5000);
  }
  for (absl::string_view item : absl::StrSplit(target.Param("include"), ',', absl::SkipEmpty())) {
    if (item == "metadata") out->metadata = true;
    if (item == "tags") out->tags = true;
  }
  return absl::OkStatus();
}

std::string Tag(std::string_view name, std::string_view value) {
  const absl::string_view n(name.data(), name.size());
  return absl::StrCat("<", n, ">", blobfmt::XmlEscape(value), "</", n, ">");
}

// List Blobs spells blob ETags without quotes (containers keep theirs).
std::string Unquoted(const std::string& etag) { return etag.substr(1, etag.size() - 2); }

std::string LeaseXml(const internalpb::BlobLease& lease) {
  std::string out = Tag("LeaseStatus", blobfmt::LeaseStatus(lease)) +
                    Tag("LeaseState", blobfmt::LeaseState(lease));
  if (std::string d = blobfmt::LeaseDuration(lease); !d.empty()) out += Tag("LeaseDuration", d);
  return out;
}

std::string MetadataXml(const BlobRecord& record) {
  std::vector<std::pair<std::string, std::string>> sorted(record.metadata().begin(),
                                                          record.metadata().end());
  std::sort(sorted.begin(), sorted.end());
  std::string out = "<Metadata>";
  for (const auto& [k, v] : sorted) out += Tag(k, v);
  return out + "</Metadata>";
}

}  // namespace

void BlobService::ListContainers(std::shared_ptr<Call> call, const BlobTarget& target) {
  ListParams params;
  if (absl::Status error = ParseListParams(target, &params); !error.ok()) return call->Fail(error);
  member_->proposer().ReadBarrier([this, call, params](absl::Status barrier) {
    if (!barrier.ok()) {
      call->Fail(BlobError{503, "ServerBusy", std::string(barrier.message()), {}});
      return;
    }
    const int64_t now = Member::NowUnixMs();
    std::string items, next_marker;
    int64_t count = 0;
    const std::string from = std::max(params.marker, params.prefix);
    member_->state_machine().ReadBlobTable([&](const storage::BlobTable& table) {
      table.ForEachContainer(from, [&](const std::string& name, const BlobRecord& record) {
        if (!name.starts_with(params.prefix)) return false;
        if (count == params.max_results) {
          next_marker = name;
          return false;
        }
        ++count;
        const auto lease = storage::EffectiveLease(record.lease(), now);
        absl::StrAppend(
            &items, "<Container>", Tag("Name", name), "<Properties>",
            Tag("Last-Modified", blobfmt::HttpDate(record.last_modified_ms())),
            Tag("Etag", storage::BlobETag(record.etag_revision())), LeaseXml(lease),
            record.public_access().empty() ? "" : Tag("PublicAccess", record.public_access()),
            "<HasImmutabilityPolicy>false</HasImmutabilityPolicy><HasLegalHold>false</"
            "HasLegalHold>",
            "</Properties>", params.metadata ? MetadataXml(record) : "", "</Container>");
        return true;
      });
    });
    HttpResponse response = call->Base(200);
    response.set(http::field::content_type, "application/xml");
    response.body() = absl::StrCat(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"",
        blobfmt::XmlEscape(options_.endpoint + call->account), "/\">",
        params.prefix.empty() ? "" : Tag("Prefix", params.prefix),
        params.marker.empty() ? "" : Tag("Marker", params.marker),
        Tag("MaxResults", std::to_string(params.max_results)), "<Containers>", items,
        "</Containers>", next_marker.empty() ? "<NextMarker />" : Tag("NextMarker", next_marker),
        "</EnumerationResults>");
    call->respond(std::move(response));
  });
}

void BlobService::ListBlobs(std::shared_ptr<Call> call, const BlobTarget& target) {
  ListParams params;
  if (absl::Status error = ParseListParams(target, &params); !error.ok()) return call->Fail(error);
  const std::string container = target.container;
  member_->proposer().ReadBarrier([this, call, params, container](absl::Status barrier) {
    if (!barrier.ok()) {
      call->Fail(BlobError{503, "ServerBusy", std::string(barrier.message()), {}});
      return;
    }
    const int64_t now = Member::NowUnixMs();
    std::string items, next_marker, last_prefix;
    int64_t count = 0;
    bool found = true;
    const std::string from = std::max(params.marker, params.prefix);
    member_->state_machine().ReadBlobTable([&](const storage::BlobTable& table) {
      if (table.Find(storage::BlobKey{container, ""}) == nullptr) {
        found = false;
        return;
      }
      table.ForEachBlob(container, from, [&](std::string_view name, const BlobRecord& record) {
        if (!name.starts_with(params.prefix)) return false;
        std::string prefix_entry;
        if (!params.delimiter.empty()) {
          const size_t cut = name.find(params.delimiter, params.prefix.size());
          if (cut != std::string_view::npos) {
            prefix_entry = std::string(name.substr(0, cut + params.delimiter.size()));
            if (prefix_entry == last_prefix) return true;
          }
        }
        if (count == params.max_results) {
          next_marker = std::string(name);
          return false;
        }
        ++count;
        if (!prefix_entry.empty()) {
          last_prefix = prefix_entry;
          absl::StrAppend(&items, "<BlobPrefix>", Tag("Name", prefix_entry), "</BlobPrefix>");
          return true;
        }
        const auto& p = record.properties();
        const auto lease = storage::EffectiveLease(record.lease(), now);
        absl::StrAppend(
            &items, "<Blob>", Tag("Name", name), "<Properties>",
            Tag("Creation-Time", blobfmt::HttpDate(record.created_ms())),
            Tag("Last-Modified", blobfmt::HttpDate(record.last_modified_ms())),
            Tag("Etag", Unquoted(storage::BlobETag(record.etag_revision()))),
            Tag("Content-Length", std::to_string(record.content_length())),
            Tag("Content-Type", p.content_type()), Tag("Content-Encoding", p.content_encoding()),
            Tag("Content-Language", p.content_language()),
            Tag("Content-MD5", absl::Base64Escape(p.content_md5())),
            Tag("Cache-Control", p.cache_control()),
            Tag("Content-Disposition", p.content_disposition()), "<BlobType>BlockBlob</BlobType>",
            "<AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred>",
            LeaseXml(lease), "<ServerEncrypted>true</ServerEncrypted>",
            record.tags_size() > 0 ? Tag("TagCount", std::to_string(record.tags_size())) : "",
            "</Properties>", params.metadata ? MetadataXml(record) : "",
            params.tags && record.tags_size() > 0 ? "<Tags>" + TagSetXml(record.tags()) + "</Tags>"
                                                  : "",
            "</Blob>");
        return true;
      });
    });
    if (!found) {
      call->Fail(
          BlobError{404, "ContainerNotFound", "The specified container does not exist.", {}});
      return;
    }
    HttpResponse response = call->Base(200);
    response.set(http::field::content_type, "application/xml");
    response.body() = absl::StrCat(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"",
        blobfmt::XmlEscape(options_.endpoint + call->account), "/\" ContainerName=\"",
        blobfmt::XmlEscape(container), "\">",
        params.prefix.empty() ? "" : Tag("Prefix", params.prefix),
        params.marker.empty() ? "" : Tag("Marker", params.marker),
        Tag("MaxResults", std::to_string(params.max_results)),
        params.delimiter.empty() ? "" : Tag("Delimiter", params.delimiter), "<Blobs>", items,
        "</Blobs>", next_marker.empty() ? "<NextMarker />" : Tag("NextMarker", next_marker),
        "</EnumerationResults>");
    call->respond(std::move(response));
  });
}

}  // namespace leasehold::server
