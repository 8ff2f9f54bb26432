#include "server/command/ports.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <random>

#include <grpcpp/server_posix.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/url.h"
#include "server/api/lease_service.h"
#include "server/api/unmarshal_error.h"
#include "server/api/watch_service.h"
#include "server/blob/blob_auth.h"
#include "server/http/client_port_http.h"
#include "server/observability/grpc_metrics.h"
#include "server/observability/log.h"
#include "server/tls/tls.h"

namespace leasehold::server {
namespace {

// Adds a listening port for each of `urls` (http://host:port, or https:// with `tls`; unix:// and
// unixs:// are Unix domain sockets).
absl::Status AddListeners(grpc::ServerBuilder& builder, const std::vector<std::string>& urls,
                          const TlsFiles& tls, std::string_view port_name) {
  for (const auto& url : urls) {
    auto address = GrpcAddressOfUrl(url);
    if (!address.ok()) return address.status();
    auto credentials = ServerCredentialsFor(url, tls, port_name);
    if (!credentials.ok()) return credentials.status();
    builder.AddListeningPort(*address, *credentials);
  }
  return absl::OkStatus();
}

// An HTTP listener's address from "host:port" (HostPortOfUrl has checked the port).
HttpServer::Options HttpListenOptions(const std::string& host_port) {
  HttpServer::Options options;
  const size_t colon = host_port.rfind(':');
  options.host = host_port.substr(0, colon);
  if (options.host == "localhost") options.host = "127.0.0.1";
  if (options.host.size() > 2 && options.host.front() == '[')
    options.host = options.host.substr(1, options.host.size() - 2);
  options.port = static_cast<uint16_t>(std::stoi(host_port.substr(colon + 1)));
  return options;
}

}  // namespace

PeerPort::PeerPort(Member* member, NodeLoop* node)
    : peer_(member, node), cluster_(member, ClusterService::Port::kPeer), hash_(member) {}

absl::Status PeerPort::Start(const Flags& flags) {
  grpc::ServerBuilder builder;
  std::vector<std::string> plain_urls, tls_urls;
  for (const std::string& url : flags.listen_peer_urls) {
    (IsHttpsUrl(url) ? tls_urls : plain_urls).push_back(url);
  }
  if (absl::Status st = AddListeners(builder, plain_urls, flags.peer_tls, "peer"); !st.ok()) {
    return WithContext("bad --listen-peer-urls", st);
  }
  builder.SetMaxReceiveMessageSize(std::numeric_limits<int>::max());
  builder.SetMaxSendMessageSize(std::numeric_limits<int>::max());
  builder.RegisterService(&peer_);
  builder.RegisterService(&cluster_);  // where joining members look themselves up
  builder.RegisterService(&hash_);     // where members compare their data
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError("binding the peer URLs failed (port in use?)");
  }
  if (tls_urls.empty()) return absl::OkStatus();
  for (const std::string& url : tls_urls) {
    if (absl::Status st = CheckCertificateGiven(url, flags.peer_tls); !st.ok())
      return WithContext("bad --listen-peer-urls", st);
  }
  tls_listener_ = std::make_unique<PeerTlsListener>(
      flags.peer_tls,
      [server = server_.get()](int fd) { grpc::AddInsecureChannelFromFd(server, fd); });
  if (absl::Status st = tls_listener_->Start(tls_urls); !st.ok())
    return WithContext("bad --listen-peer-urls", st);
  return absl::OkStatus();
}

void PeerPort::Stop() {
  if (tls_listener_) tls_listener_->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

absl::Status ConfigureClientGrpc(const Flags& flags, grpc::ServerBuilder& builder,
                                 std::string* grpc_tls_socket) {
  grpc_tls_socket->clear();
  // Every client URL is ours: HTTP/1.1 requests on it get the JSON gateway, /health, /metrics and
  // /version, and gRPC connections go to gRPC. On a plain http:// URL such a connection is handed
  // over as it is (HTTP/2's preface tells it); on an https:// one the ClientHello tells it and the
  // connection is relayed, still encrypted, to gRPC's own TLS listener on an abstract Unix socket
  // (gRPC takes over a descriptor only without TLS).
  if (AnyHttpsUrl(flags.listen_client_urls)) {
    // The abstract socket's name is this process's own: another member on the machine has another.
    *grpc_tls_socket =
        absl::StrCat("leasehold-grpc-tls-", getpid(), "-", absl::Hex(std::random_device()()));
    auto credentials =
        ServerCredentialsFor("https://" + *grpc_tls_socket, flags.client_tls, "client");
    if (!credentials.ok()) return WithContext("bad --listen-client-urls", credentials.status());
    builder.AddListeningPort("unix-abstract:" + *grpc_tls_socket, *credentials);
  }
  // unix:// and unixs:// client URLs are gRPC's own sockets (HTTP/1.1 is served on TCP URLs only).
  std::vector<std::string> unix_urls;
  for (const std::string& url : flags.listen_client_urls) {
    if (IsUnixUrl(url)) unix_urls.push_back(url);
  }
  if (absl::Status st = AddListeners(builder, unix_urls, flags.client_tls, "client"); !st.ok())
    return WithContext("bad --listen-client-urls", st);
  // etcd accepts requests up to --max-request-bytes plus gRPC's framing overhead.
  builder.SetMaxReceiveMessageSize(static_cast<int>(flags.max_request_bytes + kGrpcOverheadBytes));
  builder.SetMaxSendMessageSize(std::numeric_limits<int>::max());
  // etcd's keepalive policy (--grpc-keepalive-*): a client with a call open may ping every min-time
  // (etcd's clients ping every 10 s at most; gRPC C++'s own default would allow one ping in 5
  // minutes), one without may ping every two hours, and after two pings that came too soon it is
  // sent GOAWAY, as grpc-go's servers send it (etcd's enforcement does not permit pings without a
  // stream; gRPC C++ then judges them by two hours too). The server pings connections that carry
  // calls and have been quiet for the interval.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             static_cast<int>(flags.grpc_keepalive_min_time_ms));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             static_cast<int>(flags.grpc_keepalive_interval_ms));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             static_cast<int>(flags.grpc_keepalive_timeout_ms));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  // No answer of gRPC's own when a call's deadline passes: it would reach a client a moment before
  // the client's own timer fires, and etcd's Go client re-sends any call, a write included, that
  // the server answered DeadlineExceeded before its deadline, while the first copy may still apply
  // (see docs/client-retries.md). The client ends the call itself at its deadline; until then every
  // answer is etcd's (a proposal that cannot finish gets "request timed out", Unavailable).
  builder.AddChannelArgument(GRPC_ARG_ENABLE_DEADLINE_CHECKS, 0);
  // A client opening more streams on one connection waits for one to end (HTTP/2's limit).
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(std::min<int64_t>(flags.max_concurrent_streams,
                                                                std::numeric_limits<int>::max())));
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(NewUnmarshalErrorInterceptorFactory());
  interceptors.push_back(
      NewGrpcMetricsInterceptorFactory(/*handling_time=*/flags.metrics == "extensive",
                                       {WatchService::kRawMethod, LeaseService::kRawMethod}));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::unique_ptr<HttpServer>>> StartClientHttp(
    const Flags& flags, grpc::Server* grpc_server, const std::string& grpc_tls_socket,
    JsonGateway* gateway, HealthService* health, const std::string& version) {
  std::vector<std::unique_ptr<HttpServer>> servers;
  for (const auto& url : flags.listen_client_urls) {
    if (IsUnixUrl(url)) continue;  // gRPC's alone (ConfigureClientGrpc)
    auto host_port = HostPortOfUrl(url);
    if (!host_port.ok()) return WithContext("bad --listen-client-urls", host_port.status());
    HttpServer::Options http_options = HttpListenOptions(*host_port);
    // Keys and values travel base64-encoded in JSON (4 bytes for 3): a body that decodes to a
    // request gRPC would take must be read whole; the request's own limits are checked once
    // decoded.
    http_options.body_limit_bytes =
        static_cast<uint64_t>((flags.max_request_bytes + kGrpcOverheadBytes) / 3 * 4 + 65536);
    if (IsHttpsUrl(url)) {
      http_options.tls = flags.client_tls;
      http_options.relay_grpc_tls_to = grpc_tls_socket;
    } else {
      http_options.divert_http2 = [grpc_server](int fd) {
        grpc::AddInsecureChannelFromFd(grpc_server, fd);
      };
    }
    http_options.too_large = [](const HttpRequest&) { return JsonGateway::TooLarge(); };
    ClientPortHttp answer{flags.enable_grpc_gateway ? gateway : nullptr,
                          health,
                          version,
                          flags.cors,
                          flags.host_whitelist,
                          IsHttpsUrl(url)};
    auto& server = servers.emplace_back(std::make_unique<HttpServer>(
        http_options,
        [answer = std::move(answer)](HttpRequest&& request, HttpServer::Respond respond) {
          answer.Serve(std::move(request), std::move(respond));
        }));
    if (absl::Status st = server->Start(); !st.ok()) return st;
  }
  return servers;
}

absl::StatusOr<BlobAdapter> StartBlobAdapter(const Flags& flags, Member* member) {
  BlobAdapter adapter;
  if (flags.listen_blob_url.empty()) return adapter;
  auto host_port = HostPortOfUrl(flags.listen_blob_url);
  if (!host_port.ok()) return WithContext("bad --listen-blob-urls", host_port.status());
  if (flags.max_blob_bytes > flags.max_request_bytes - 65536) {
    return absl::InvalidArgumentError(
        "bad --max-blob-bytes: must leave 64 KiB of --max-request-bytes for headers");
  }
  std::map<std::string, std::string> accounts;
  if (flags.blob_accounts.empty()) {
    accounts[std::string(kDevAccountName)] = std::string(kDevAccountKey);
  }
  for (const auto& account : flags.blob_accounts) {
    const size_t colon = account.find(':');
    accounts[account.substr(0, colon)] = account.substr(colon + 1);
  }
  auto verifier = SharedKeyVerifier::Create(accounts);
  if (!verifier.ok()) return WithContext("bad --blob-accounts", verifier.status());
  BlobService::Options blob_options;
  blob_options.max_blob_bytes = static_cast<uint64_t>(flags.max_blob_bytes);
  blob_options.endpoint = flags.listen_blob_url + (flags.listen_blob_url.back() == '/' ? "" : "/");
  adapter.service = std::make_unique<BlobService>(member, std::move(*verifier), blob_options);
  HttpServer::Options http_options = HttpListenOptions(*host_port);
  // An https:// URL is served with the client port's certificate (--cert-file, --key-file, ...).
  if (IsHttpsUrl(flags.listen_blob_url)) http_options.tls = flags.client_tls;
  http_options.body_limit_bytes = static_cast<uint64_t>(flags.max_blob_bytes);
  BlobService* service = adapter.service.get();
  http_options.too_large = [service](const HttpRequest& request) {
    return service->TooLarge(request);
  };
  adapter.server = std::make_unique<HttpServer>(
      http_options, [service](HttpRequest&& request, HttpServer::Respond respond) {
        service->Handle(std::move(request), std::move(respond));
      });
  RETURN_IF_ERROR(adapter.server->Start());
  return adapter;
}

absl::StatusOr<std::unique_ptr<HttpServer>> StartMetricsListener(const Flags& flags,
                                                                 HealthService* health) {
  if (flags.listen_metrics_url.empty()) return nullptr;
  auto host_port = HostPortOfUrl(flags.listen_metrics_url);
  if (!host_port.ok()) return WithContext("bad --listen-metrics-urls", host_port.status());
  HttpServer::Options http_options = HttpListenOptions(*host_port);
  if (IsHttpsUrl(flags.listen_metrics_url)) http_options.tls = flags.client_tls;  // as etcd's
  http_options.threads = 1;
  http_options.body_limit_bytes = 4096;
  auto server = std::make_unique<HttpServer>(
      http_options, [health](HttpRequest&& request, HttpServer::Respond respond) {
        health->Handle(std::move(request), std::move(respond));
      });
  if (absl::Status st = server->Start(); !st.ok()) return st;
  return server;
}

void RemoveUnixSockets(const Flags& flags) {
  for (const auto* urls : {&flags.listen_client_urls, &flags.listen_peer_urls}) {
    for (const std::string& url : *urls) {
      if (!IsUnixUrl(url)) continue;
      std::error_code ignored;
      std::filesystem::remove(GrpcAddressOfUrl(url)->substr(5), ignored);  // after "unix:"
    }
  }
}

}  // namespace leasehold::server
