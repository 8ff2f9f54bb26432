// libFuzzer target: the blob adapter's request handling before it reaches the log. The input is
// raw bytes on the wire; whatever Beast's parser accepts as an HTTP request goes through the
// adapter's parsing (target, common, lease, tag, Put Blob and fencing headers, the tag document)
// and SharedKey's canonicalisation and verification, in every signing form. None may crash, hang or
// read out of bounds; a refusal is a valid outcome.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http/parser.hpp"
#include "server/blob/blob_auth.h"
#include "server/blob/blob_request_parser.h"
#include "server/blob/blob_tag_document.h"

namespace {

namespace http = boost::beast::http;
using leasehold::server::HttpRequest;

const leasehold::server::SharedKeyVerifier& Verifier() {
  static const auto* verifier =
      new leasehold::server::SharedKeyVerifier(*leasehold::server::SharedKeyVerifier::Create(
          {{std::string(leasehold::server::kDevAccountName),
            std::string(leasehold::server::kDevAccountKey)}}));
  return *verifier;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(64 * 1024);
  parser.body_limit(1024 * 1024);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;
  HttpRequest request = parser.release();

  const auto target = leasehold::server::ParseBlobTarget(
      std::string_view(request.target().data(), request.target().size()));
  if (!target) return 0;
  for (bool language_first : {false, true}) {
    for (bool culture_order : {false, true}) {
      leasehold::server::SigningForm form;
      form.language_first = language_first;
      form.culture_order = culture_order;
      form.skip_empty_params = culture_order;
      form.collapse_whitespace = !language_first;
      (void)leasehold::server::SharedKeyVerifier::StringToSign(
          request, target->account, target->raw_path, target->query, form);
    }
  }
  (void)Verifier().Verify(request, target->account, target->raw_path, target->query,
                          1'700'000'000'000);

  leasehold::internalpb::BlobRequest blob;
  (void)leasehold::server::ParseCommonHeaders(request, true, &blob);
  (void)leasehold::server::ParseLeaseHeaders(request, &blob);
  (void)leasehold::server::ParseFencingToken(request, &blob);
  (void)leasehold::server::ParseTagCondition(request, &blob);
  (void)leasehold::server::ParseBlobProperties(request, &blob);
  (void)leasehold::server::ParsePutBlob(request, &blob);
  (void)leasehold::server::ParseTagDocument(request.body(), &blob);
  return 0;
}
