#include "server/http/health_service.h"

#include <memory>

#include "server/member/member_stats.h"
#include "server/observability/metrics.h"

namespace leasehold::server {
namespace {

namespace http = boost::beast::http;

// etcd writes its JSON without a content type, so Go's sniffing names it plain text.
HttpResponse Health(bool healthy) {
  Metrics::Get().CountHealthCheck(healthy);
  return MakeHttpResponse(healthy ? http::status::ok : http::status::service_unavailable,
                          "text/plain; charset=utf-8",
                          healthy ? "{\"health\":\"true\"}" : "{\"health\":\"false\"}");
}

}  // namespace

void HealthService::Handle(HttpRequest&& request, HttpServer::Respond respond) {
  const std::string target(request.target());
  const std::string path = target.substr(0, target.find('?'));
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    return respond(MakeHttpResponse(http::status::method_not_allowed, "text/plain; charset=utf-8",
                                    "Method Not Allowed\n"));
  }
  if (path == "/metrics") {
    return respond(MakeHttpResponse(http::status::ok, "text/plain; version=0.0.4; charset=utf-8",
                                    Metrics::Get().Render(StatsOf(*member_, watch_hub_))));
  }
  if (path != "/health")
    return respond(MakeHttpResponse(http::status::not_found, "text/plain; charset=utf-8",
                                    "404 page not found\n"));
  // As etcd's: unhealthy while any alarm is raised (NOSPACE, CORRUPT) or no leader is known.
  if (!member_->state_machine().alarms().List(etcdserverpb::NONE).empty())
    return respond(Health(false));
  if (member_->proposer().leader_id() == 0) return respond(Health(false));
  // A read barrier fails within the request timeout when no quorum answers.
  auto shared_respond = std::make_shared<HttpServer::Respond>(std::move(respond));
  member_->proposer().ReadBarrier(
      [shared_respond](absl::Status st) { (*shared_respond)(Health(st.ok())); });
}

}  // namespace leasehold::server
