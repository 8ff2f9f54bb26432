#include "server/http/health_service.h"

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

// One probe check's outcome, for the report below.
struct ProbeCheck {
  std::string name;
  bool excluded = false;
  absl::Status status;
};

// etcd's /livez and /readyz answer (Kubernetes' probe format): "ok" when every check passed, each
// check on a line of its own with ?verbose ("[+]name ok", "[+]name excluded: ok"); when one failed,
// 503 with every check listed ("[-]name failed: reason withheld") and "<probe> check failed".
HttpResponse ProbeReport(const std::string& probe, const std::vector<ProbeCheck>& checks,
                         bool verbose) {
  bool failed = false;
  std::string lines;
  for (const ProbeCheck& check : checks) {
    if (check.excluded) {
      absl::StrAppend(&lines, "[+]", check.name, " excluded: ok\n");
    } else if (check.status.ok()) {
      absl::StrAppend(&lines, "[+]", check.name, " ok\n");
    } else {
      failed = true;
      absl::StrAppend(&lines, "[-]", check.name, " failed: reason withheld\n");
    }
  }
  if (failed) {
    return MakeHttpResponse(http::status::service_unavailable, "text/plain; charset=utf-8",
                            absl::StrCat(lines, probe, " check failed\n"));
  }
  return MakeHttpResponse(http::status::ok, "text/plain; charset=utf-8",
                          verbose ? absl::StrCat(lines, probe, " check passed\n") : "ok");
}

}  // namespace

void HealthService::ServeProbe(bool ready, std::string_view query, HttpServer::Respond respond) {
  bool verbose = false;
  std::set<std::string, std::less<>> excluded;
  const std::vector<std::string> pairs = absl::StrSplit(std::string(query), '&', absl::SkipEmpty());
  for (const std::string& pair : pairs) {
    const size_t eq = pair.find('=');
    const std::string key = pair.substr(0, eq);
    if (key == "verbose") verbose = true;
    if (key == "exclude" && eq != std::string::npos) excluded.insert(pair.substr(eq + 1));
  }
  auto check = [&](std::string name, const std::function<absl::Status()>& run) {
    ProbeCheck result{name, excluded.contains(name), absl::OkStatus()};
    if (!result.excluded) result.status = run();
    return result;
  };
  std::vector<ProbeCheck> checks;
  if (ready) {
    checks.push_back(check("data_corruption", [this] {
      return member_->state_machine().alarms().List(etcdserverpb::CORRUPT).empty()
                 ? absl::OkStatus()
                 : absl::DataLossError("corrupt");
    }));
  }
  checks.push_back(check("serializable_read", [this] {
    etcdserverpb::RangeRequest range;
    range.set_key(std::string(1, '\0'));
    range.set_keys_only(true);
    range.set_limit(1);
    return member_->state_machine().Range(range).status();
  }));
  const std::string probe = ready ? "readyz" : "livez";
  if (!ready || excluded.contains("linearizable_read")) {
    if (ready) checks.push_back(ProbeCheck{"linearizable_read", true, absl::OkStatus()});
    return respond(ProbeReport(probe, checks, verbose));
  }
  auto shared_respond = std::make_shared<HttpServer::Respond>(std::move(respond));
  member_->proposer().ReadBarrier(
      [shared_respond, checks, probe, verbose](absl::Status st) mutable {
        checks.push_back(ProbeCheck{"linearizable_read", false, st});
        (*shared_respond)(ProbeReport(probe, checks, verbose));
      });
}

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
  if (path == "/livez" || path == "/readyz") {
    const size_t question = target.find('?');
    return ServeProbe(path == "/readyz",
                      question == std::string::npos ? "" : target.substr(question + 1),
                      std::move(respond));
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
