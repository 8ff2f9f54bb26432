#include "server/http/client_port_http.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/observability/log.h"

namespace leasehold::server {
namespace {

namespace http = boost::beast::http;

// etcd's access controller: an answer lets web pages of an allowed origin read it ("*" when all
// are, the default), and a browser's OPTIONS preflight is answered at once.
std::string AllowedOrigin(const std::vector<std::string>& cors, const HttpRequest& request) {
  if (cors.empty() || std::find(cors.begin(), cors.end(), "*") != cors.end()) return "*";
  const auto origin = request.find(http::field::origin);
  if (origin == request.end()) return "";
  const std::string asked(origin->value().data(), origin->value().size());
  return std::find(cors.begin(), cors.end(), asked) != cors.end() ? asked : "";
}

void AddCorsHeaders(HttpResponse& response, const std::string& origin) {
  if (origin.empty()) return;
  response.set("Access-Control-Allow-Methods", "POST, GET, OPTIONS, PUT, DELETE");
  response.set("Access-Control-Allow-Origin", origin);
  response.set("Access-Control-Allow-Headers", "accept, content-type, authorization");
}

// etcd's answer to a Host outside --host-whitelist, word for word.
HttpResponse MisdirectedRequest(std::string_view host) {
  HttpResponse response = MakeHttpResponse(
      http::status::misdirected_request, "text/plain; charset=utf-8",
      absl::StrCat(
          "\netcd received your request, but the Host header was unrecognized.\n\n"
          "To fix this, choose one of the following options:\n"
          "- Enable TLS, then any HTTPS request will be allowed.\n"
          "- Add the hostname you want to use to the whitelist in settings.\n"
          "  - e.g. etcd --host-whitelist \"",
          std::string(host),
          "\"\n\nThis requirement has been added to help prevent \"DNS Rebinding\" attacks "
          "(CVE-2018-5702).\n\n"));
  response.set("X-Content-Type-Options", "nosniff");
  return response;
}

}  // namespace

std::string_view HostOfHeader(std::string_view header) {
  if (!header.empty() && header.front() == '[') {
    const size_t close = header.find(']');
    if (close == std::string_view::npos || close + 1 >= header.size() || header[close + 1] != ':')
      return header;
    const std::string_view inside = header.substr(1, close - 1);
    const std::string_view port = header.substr(close + 2);
    if (port.find_first_of("[]:") != std::string_view::npos) return header;
    return inside;
  }
  const size_t colon = header.find(':');
  if (colon == std::string_view::npos || header.find(':', colon + 1) != std::string_view::npos)
    return header;
  const std::string_view host = header.substr(0, colon);
  if (host.find_first_of("[]") != std::string_view::npos ||
      header.substr(colon + 1).find_first_of("[]") != std::string_view::npos) {
    return header;
  }
  return host;
}

bool HostWhitelisted(const std::vector<std::string>& whitelist, std::string_view host) {
  if (whitelist.empty() || std::find(whitelist.begin(), whitelist.end(), "*") != whitelist.end())
    return true;
  return std::find(whitelist.begin(), whitelist.end(), host) != whitelist.end();
}

void ClientPortHttp::Serve(HttpRequest&& request, HttpServer::Respond plain_respond) const {
  if (!tls) {
    const auto field = request.find(http::field::host);
    const std::string_view header =
        field == request.end() ? std::string_view()
                               : std::string_view(field->value().data(), field->value().size());
    const std::string_view host = HostOfHeader(header);
    if (!HostWhitelisted(host_whitelist, host)) {
      LogWarn("rejecting HTTP request to prevent DNS rebinding attacks",
              {{"host", std::string(host)}});
      return plain_respond(MisdirectedRequest(host));
    }
  }
  const std::string origin = AllowedOrigin(cors, request);
  HttpServer::Respond respond(
      [plain_respond, origin](HttpResponse response) {
        AddCorsHeaders(response, origin);
        plain_respond(std::move(response));
      },
      [plain_respond, origin](HttpResponse header) {
        AddCorsHeaders(header, origin);
        return plain_respond.Stream(std::move(header));
      });
  if (request.method() == http::verb::options) {
    return respond(MakeHttpResponse(http::status::ok, "text/plain; charset=utf-8", ""));
  }
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  if (gateway != nullptr && JsonGateway::Serves(path))
    return gateway->Handle(std::move(request), std::move(respond));
  if (path == "/health" || path == "/metrics" || path == "/livez" || path == "/readyz")
    return health->Handle(std::move(request), std::move(respond));
  if (path == "/version") {
    return respond(MakeHttpResponse(http::status::ok, "application/json",
                                    "{\"etcdserver\":\"" + version + "\",\"etcdcluster\":\"" +
                                        version.substr(0, version.rfind('.')) + ".0\"}"));
  }
  respond(MakeHttpResponse(http::status::not_found, "text/plain; charset=utf-8",
                           "404 page not found\n"));
}

}  // namespace leasehold::server
