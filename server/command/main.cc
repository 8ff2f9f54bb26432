// leasehold: the server binary. Opens the data dir, joins or founds its Raft cluster, replays what
// was committed but not applied, and serves the etcd v3 gRPC API until SIGINT or SIGTERM.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>

#include <grpcpp/grpcpp.h>
#include <grpcpp/server_posix.h>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "client/leasehold/client.h"
#include "server/api/auth_service.h"
#include "server/api/blocking_calls.h"
#include "server/api/cluster_service.h"
#include "server/api/election_service.h"
#include "server/api/kv_service.h"
#include "server/api/lease_service.h"
#include "server/api/lock_service.h"
#include "server/api/maintenance_service.h"
#include "server/api/peer_service.h"
#include "server/api/unmarshal_error.h"
#include "server/api/watch_service.h"
#include "server/auth/jwt_tokens.h"
#include "server/blob/blob_auth.h"
#include "server/blob/blob_service.h"
#include "server/command/auto_tls.h"
#include "server/command/backup_command.h"
#include "server/command/cluster_config.h"
#include "server/command/flags.h"
#include "server/command/force_new_cluster.h"
#include "server/command/identity.h"
#include "server/command/join.h"
#include "server/corruption/corruption_monitor.h"
#include "server/corruption/initial_corrupt_check.h"
#include "server/http/client_port_http.h"
#include "server/http/health_service.h"
#include "server/http/http_server.h"
#include "server/http/json_gateway.h"
#include "server/member/auto_compactor.h"
#include "server/member/election_tick_advance.h"
#include "server/member/expiry_loop.h"
#include "server/member/member.h"
#include "server/member/node_loop.h"
#include "server/observability/grpc_metrics.h"
#include "server/observability/log.h"
#include "server/observability/metrics.h"
#include "server/peer/peer_transport.h"
#include "server/tls/certificate_rules.h"
#include "server/tls/cipher_suites.h"
#include "server/tls/self_signed_cert.h"
#include "server/tls/tls.h"
#include "server/watch/watch_hub.h"

namespace leasehold::server {
namespace {

int64_t MinLeaseTtlSeconds(const Flags& flags) {
  const int64_t election_ticks =
      std::max<int64_t>(1, flags.election_timeout_ms / flags.heartbeat_interval_ms);
  const int64_t ms = (3 * election_ticks / 2) * flags.heartbeat_interval_ms;
  return (ms + 999) / 1000;
}

// Adds a listening port for each of `urls` (http://host:port, or https:// with `tls`).
absl::Status AddListeners(grpc::ServerBuilder& builder, const std::vector<std::string>& urls,
                          const TlsFiles& tls, std::string_view port_name) {
  for (const auto& url : urls) {
    auto host_port = HostPortOfUrl(url);
    if (!host_port.ok()) return host_port.status();
    auto credentials = ServerCredentialsFor(url, tls, port_name);
    if (!credentials.ok()) return credentials.status();
    builder.AddListeningPort(*host_port, *credentials);
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

bool AnyHttpsUrl(const std::vector<std::string>& urls) {
  return std::any_of(urls.begin(), urls.end(), IsHttpsUrl);
}

int Fail(const std::string& what, const absl::Status& status) {
  LogError(what, {{"error", status.ToString()}});
  return 1;
}

int Serve(Flags flags) {
  auto cluster = BuildClusterConfig(flags);
  if (!cluster.ok()) return Fail("bad cluster configuration", cluster.status());
  for (const auto& [tls, port] :
       {std::pair{&flags.client_tls, "client"}, std::pair{&flags.peer_tls, "peer"}}) {
    if (absl::Status st = ValidateCertificateRules(*tls); !st.ok())
      return Fail("bad TLS configuration", st);
    if (HasCertificateRules(*tls) && !tls->client_cert_auth) {
      // etcd applies them to verified certificates only, which are asked for under client cert
      // auth.
      LogWarn(std::string(port) +
              " certificate revocation list and allowed name have no effect without " +
              (tls == &flags.client_tls ? "--client-cert-auth" : "--peer-client-cert-auth"));
    }
  }
  if (!flags.cipher_suites.empty()) {
    absl::StatusOr<std::string> ciphers = OpenSslCipherList(flags.cipher_suites);
    if (!ciphers.ok()) return Fail("bad --cipher-suites", ciphers.status());
    if (AnyHttpsUrl(flags.listen_client_urls)) {
      if (absl::Status st = CheckHttp2CipherSuites(flags.cipher_suites); !st.ok())
        return Fail("bad --cipher-suites", st);
    }
    flags.client_tls.cipher_list = flags.peer_tls.cipher_list = *ciphers;
    // gRPC takes its TLS 1.2 cipher list from the environment, read when it first makes a TLS
    // context (none has been made yet): for the client and peer ports and for dialling peers.
    setenv("GRPC_SSL_CIPHER_SUITES", ciphers->c_str(), 1);
  }
  absl::StatusOr<AutoCompaction> auto_compaction =
      ParseAutoCompaction(flags.auto_compaction_mode, flags.auto_compaction_retention);
  if (!auto_compaction.ok()) return Fail("bad auto compaction", auto_compaction.status());
  auto engine = storage::Engine::Open(flags.data_dir, flags.wal_dir);
  if (!engine.ok()) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::path(flags.data_dir) / "member" / "snap", ec)) {
      // What `etcdctl snapshot restore` (or etcd itself) leaves: say how to bring its data over.
      return Fail(
          "cannot open data dir",
          absl::FailedPreconditionError(
              flags.data_dir + " is an etcd data dir, which Leasehold does not open: a backup "
                               "saved from Leasehold (`etcdctl snapshot save`) is restored with "
                               "`leasehold snapshot restore FILE --data-dir NEW_DIR` instead"));
    }
    return Fail("cannot open data dir", engine.status());
  }
  // Into the data dir, which the engine insists on finding empty or its own.
  if (absl::Status st = ApplyAutoTls(&flags); !st.ok())
    return Fail("cannot make self-signed certificates", st);
  // As etcd, refuse an https URL without a certificate before listening anywhere.
  for (const std::string& url : flags.listen_client_urls) {
    if (absl::Status st = CheckCertificateGiven(url, flags.client_tls); !st.ok())
      return Fail("cannot listen", st);
  }
  for (const std::string& url : flags.listen_peer_urls) {
    if (absl::Status st = CheckCertificateGiven(url, flags.peer_tls); !st.ok())
      return Fail("cannot listen", st);
  }
  std::unique_ptr<JwtTokens> jwt;
  if (flags.auth_token != "simple") {
    absl::StatusOr<JwtOptions> jwt_options = ParseJwtOptions(flags.auth_token);
    if (!jwt_options.ok()) return Fail("bad --auth-token", jwt_options.status());
    absl::StatusOr<std::unique_ptr<JwtTokens>> loaded = JwtTokens::Load(*jwt_options);
    if (!loaded.ok()) return Fail("bad --auth-token", loaded.status());
    jwt = *std::move(loaded);
  }
  // A fresh member joining a running cluster learns its ids from it; a restarted one has them
  // stored.
  if (flags.initial_cluster_state == "existing" &&
      !engine->get()->Get(storage::keys::Meta("identity")).ok()) {
    cluster = DiscoverExistingCluster(flags, *std::move(cluster), 30000);
    if (!cluster.ok()) return Fail("cannot join the cluster", cluster.status());
  }
  auto identity = LoadOrCreateIdentity(engine->get(), flags.name, *cluster);
  if (!identity.ok()) return Fail("cannot load member identity", identity.status());

  storage::StateMachine::Options sm_options;
  sm_options.min_lease_ttl_seconds = MinLeaseTtlSeconds(flags);
  auto state_machine = storage::StateMachine::Open(engine->get(), sm_options);
  if (!state_machine.ok()) return Fail("cannot restore state", state_machine.status());
  // A member that applied its own removal stays removed, as in etcd: serving on from its old data
  // would answer serializable reads from a state nobody updates.
  if ((*state_machine)->members().WasRemoved(identity->member_id())) {
    LogError("the member has been permanently removed from the cluster",
             {{"member-id", absl::StrCat(absl::Hex(identity->member_id()))}});
    LogInfo("the data-dir used by this member must be removed.", {{"data-dir", flags.data_dir}});
    return 1;
  }
  auto log_store = storage::RaftLogStore::Open(engine->get());
  if (!log_store.ok()) return Fail("cannot read the raft log", log_store.status());
  if (flags.force_new_cluster) {
    if (absl::Status st = ForceNewCluster(identity->member_id(), (*state_machine)->applied_index(),
                                          engine->get(), log_store->get());
        !st.ok()) {
      return Fail("cannot force a new cluster", st);
    }
  }

  WatchHub watch_hub(state_machine->get(),
                     absl::Milliseconds(flags.watch_progress_notify_interval_ms));
  NodeLoop* node_for_reports = nullptr;  // set below, before any message can be sent
  PeerTransport transport(
      identity->member_id(), identity->cluster_id(), &(*state_machine)->members(),
      cluster->peer_urls, flags.peer_tls,
      [&node_for_reports](uint64_t to, bool delivered) {
        node_for_reports->ReportSnapshot(to, delivered);
      },
      [] {
        // Removed while it was away: it never applied its own removal.
        LogError("the member has been permanently removed from the cluster");
        LogInfo("the data-dir used by this member must be removed.");
        kill(getpid(), SIGTERM);
      });
  const int64_t request_timeout_ms = 5000 + 2 * flags.election_timeout_ms;  // etcd's

  NodeLoop::Options node_options;
  node_options.id = identity->member_id();
  if (flags.initial_cluster_state == "new") node_options.bootstrap_members = cluster->members;
  node_options.self.set_id(identity->member_id());
  node_options.self.set_name(flags.name);
  for (const auto& url : flags.advertise_client_urls) node_options.self.add_client_urls(url);
  node_options.tick_ms = flags.heartbeat_interval_ms;
  node_options.election_ticks = static_cast<int>(
      std::max<int64_t>(2, flags.election_timeout_ms / flags.heartbeat_interval_ms));
  node_options.request_timeout_ms = request_timeout_ms;
  node_options.pre_vote = flags.pre_vote;
  node_options.replay_before_start = flags.force_new_cluster;
  node_options.warning_apply_duration_us = flags.warning_apply_duration_us;
  node_options.snapshot_count = static_cast<uint64_t>(flags.snapshot_count);
  node_options.strict_reconfig_check = flags.strict_reconfig_check;
  node_options.catch_up_entries = std::min<uint64_t>(5000, node_options.snapshot_count);
  node_options.on_removed = [] {
    LogWarn("this member was removed from the cluster; shutting down");
    kill(getpid(), SIGTERM);
  };
  // etcd's own log lines for this moment, in its words: tools that start etcd and wait for it to be
  // ready (etcd's end-to-end test framework among them) look for them.
  node_options.on_published = [self = node_options.self, api = MemberConfig().version] {
    LogInfo("published local member to cluster through raft",
            {{"local-member-id", absl::StrCat(absl::Hex(self.id()))},
             {"local-member-name", self.name()},
             {"local-member-client-urls", absl::StrJoin(self.client_urls(), ",")}});
    LogInfo("enabled capabilities for version",
            {{"cluster-version", api.substr(0, api.rfind('.'))}});
    LogInfo("ready to serve client requests");
  };
  // A new leader honours every replicated deadline plus this allowance; renewals beyond it are
  // checkpointed before they are acknowledged (Member::RenewLease), so none is revoked early.
  const int64_t lease_allowance_ms = flags.election_timeout_ms / 2;
  node_options.promote_allowance_ms = lease_allowance_ms;
  // Simple tokens: every member learns each one as it applies the grant.
  TokenStore tokens(absl::Seconds(flags.auth_token_ttl_seconds));
  storage::StateMachine* sm = state_machine->get();
  node_options.on_token_granted = [&tokens, sm](const internalpb::AuthenticateRecord& grant) {
    tokens.Add(grant.token(), {grant.name(), grant.password_hash(), sm->auth().enabled_revision()},
               absl::Now());
  };
  NodeLoop node(engine->get(), state_machine->get(), log_store->get(), &transport, node_options,
                [&watch_hub](const std::vector<mvccpb::Event>& events, int64_t revision,
                             bool resync, const std::function<void()>& answer) {
                  if (resync) {
                    watch_hub.Resync(revision);
                  } else {
                    watch_hub.Publish(events, revision, answer);
                  }
                });
  node_for_reports = &node;
  LeaderForwarder forwarder([&transport](uint64_t id) { return transport.ChannelTo(id); },
                            request_timeout_ms);

  MemberConfig config;
  config.name = flags.name;
  config.cluster_id = identity->cluster_id();
  config.member_id = identity->member_id();
  config.client_urls = flags.advertise_client_urls;
  config.peer_urls = flags.initial_advertise_peer_urls;
  config.max_request_bytes = flags.max_request_bytes;
  config.max_txn_ops = flags.max_txn_ops;
  config.quota_backend_bytes = flags.quota_backend_bytes == 0
                                   ? (int64_t{2} << 30)
                                   : std::max<int64_t>(0, flags.quota_backend_bytes);
  config.lease_allowance_ms = lease_allowance_ms;
  config.lease_lookahead_ms = flags.election_timeout_ms - lease_allowance_ms;
  config.request_timeout_ms = request_timeout_ms;
  config.bcrypt_cost = flags.bcrypt_cost;
  config.strict_reconfig_check = flags.strict_reconfig_check;
  config.client_cert_auth = flags.client_tls.client_cert_auth;
  config.jwt = jwt.get();
  Member member(config, engine->get(), state_machine->get(), &node, &forwarder, &tokens);

  // The peer port first, so the node can hear its peers as soon as it starts.
  PeerAddressCheck peer_address_check(flags.peer_tls.client_cert_auth &&
                                      !flags.peer_tls.skip_client_san_verify);
  PeerService peer_service(&member, &node, &peer_address_check);
  grpc::ServerBuilder peer_builder;
  if (absl::Status st = AddListeners(peer_builder, flags.listen_peer_urls, flags.peer_tls, "peer");
      !st.ok()) {
    return Fail("bad --listen-peer-urls", st);
  }
  peer_builder.SetMaxReceiveMessageSize(std::numeric_limits<int>::max());
  peer_builder.SetMaxSendMessageSize(std::numeric_limits<int>::max());
  peer_builder.RegisterService(&peer_service);
  // Where joining members look themselves up.
  ClusterService peer_cluster_service(&member, ClusterService::Port::kPeer, &peer_address_check);
  peer_builder.RegisterService(&peer_cluster_service);
  // Where members compare their data (--experimental-initial-corrupt-check).
  PeerHashKvService peer_hash_service(&member, &peer_address_check);
  peer_builder.RegisterService(&peer_hash_service);
  std::unique_ptr<grpc::Server> peer_server = peer_builder.BuildAndStart();
  if (peer_server == nullptr) {
    return Fail("cannot listen",
                absl::UnavailableError("binding the peer URLs failed (port in use?)"));
  }
  if (absl::Status st = node.Start(); !st.ok()) return Fail("cannot start the raft node", st);
  ElectionTickAdvance tick_advance(
      &node, [&transport] { return transport.ActivePeers(); }, node_options.election_ticks,
      node_options.tick_ms);
  // A founding member may not have applied the bootstrap membership yet: its flags name the
  // members. (A member forced into a new cluster is alone, whatever its flags still name.)
  if (!flags.force_new_cluster &&
      std::max(cluster->members.size(), (*state_machine)->members().List().size()) > 1) {
    tick_advance.Start(flags.initial_election_tick_advance);
  }
  if (flags.initial_corrupt_check) {
    if (absl::Status st =
            CheckInitialHashKv(member, flags.peer_tls, absl::Milliseconds(request_timeout_ms));
        !st.ok()) {
      return Fail("initial corruption check failed", st);
    }
  }

  ExpiryLoop::Options expiry_options;
  expiry_options.revoke_rate_per_second = flags.lease_revoke_rate;
  expiry_options.checkpoint_interval_ms = flags.lease_checkpoint_interval_ms;
  expiry_options.retry_ms = 5000 + 2 * flags.election_timeout_ms;
  ExpiryLoop expiry(&member, expiry_options);
  AutoCompactor compactor(&member, *auto_compaction);
  CorruptionMonitor corruption_monitor(&member, flags.peer_tls,
                                       absl::Milliseconds(flags.corrupt_check_ms),
                                       absl::Milliseconds(request_timeout_ms));

  KvService kv(&member);
  LeaseService lease(&member);
  MaintenanceService maintenance(&member);
  ClusterService cluster_service(&member);
  // Lock and Election wait for as long as a holder keeps its lock, each call on a thread of its
  // own.
  BlockingCalls blocking_calls(/*max_running=*/4096);
  LockService lock_service(&member, &blocking_calls);
  ElectionService election_service(&member, &blocking_calls);
  // Password hashing and checking get a small budget of their own: guessing cannot starve locks.
  BlockingCalls auth_calls(/*max_running=*/16);
  AuthService auth_service(&member, &auth_calls, absl::Milliseconds(flags.auth_failure_delay_ms));

  grpc::ServerBuilder builder;
  // Every client URL is ours: HTTP/1.1 requests on it get the JSON gateway, /health, /metrics and
  // /version, and gRPC connections go to gRPC. On a plain http:// URL such a connection is handed
  // over as it is (HTTP/2's preface tells it); on an https:// one the ClientHello tells it and the
  // connection is relayed, still encrypted, to gRPC's own TLS listener on an abstract Unix socket
  // (gRPC takes over a descriptor only without TLS).
  std::string grpc_tls_socket;
  if (AnyHttpsUrl(flags.listen_client_urls)) {
    // The abstract socket's name is this process's own: another member on the machine has another.
    grpc_tls_socket =
        absl::StrCat("leasehold-grpc-tls-", getpid(), "-", absl::Hex(std::random_device()()));
    auto credentials =
        ServerCredentialsFor("https://" + grpc_tls_socket, flags.client_tls, "client");
    if (!credentials.ok()) return Fail("bad --listen-client-urls", credentials.status());
    builder.AddListeningPort("unix-abstract:" + grpc_tls_socket, *credentials);
  }
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
      NewGrpcMetricsInterceptorFactory(/*handling_time=*/flags.metrics == "extensive"));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(&kv);
  builder.RegisterService(&lease);
  builder.RegisterService(&maintenance);
  builder.RegisterService(&cluster_service);
  WatchService watch(&member, &watch_hub, absl::Milliseconds(flags.election_timeout_ms), builder);
  builder.RegisterService(&watch);
  builder.RegisterService(&lock_service);
  builder.RegisterService(&election_service);
  builder.RegisterService(&auth_service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    return Fail("cannot listen",
                absl::UnavailableError("binding the client URLs failed (port in use?)"));
  }
  watch.Start();
  // Watch streams' queues are drained after the server shuts down and before it is destroyed (their
  // refused requests still refer to it), on every way out of here.
  absl::Cleanup stop_watch_streams = [&server, &watch] {
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    watch.Stop();
  };
  HealthService health(&member);
  Metrics::Get().SetServerVersion(config.version);
  JsonGateway gateway(server->InProcessChannel(grpc::ChannelArguments()));
  std::vector<std::unique_ptr<HttpServer>> client_http_servers;
  for (const auto& url : flags.listen_client_urls) {
    auto host_port = HostPortOfUrl(url);
    if (!host_port.ok()) return Fail("bad --listen-client-urls", host_port.status());
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
      grpc::Server* grpc_server = server.get();
      http_options.divert_http2 = [grpc_server](int fd) {
        grpc::AddInsecureChannelFromFd(grpc_server, fd);
      };
    }
    http_options.too_large = [](const HttpRequest&) { return JsonGateway::TooLarge(); };
    ClientPortHttp answer{&gateway,       &health, config.version, flags.cors, flags.host_whitelist,
                          IsHttpsUrl(url)};
    auto& http_server = client_http_servers.emplace_back(std::make_unique<HttpServer>(
        http_options,
        [answer = std::move(answer)](HttpRequest&& request, HttpServer::Respond respond) {
          answer.Serve(std::move(request), std::move(respond));
        }));
    if (absl::Status st = http_server->Start(); !st.ok()) return Fail("cannot listen", st);
  }
  // Lock and Election run etcd's recipes through a client of this very member.
  ClientOptions self_options;
  self_options.channel = server->InProcessChannel(grpc::ChannelArguments());
  self_options.request_timeout = absl::Milliseconds(request_timeout_ms);
  auto self_client = Client::Connect(self_options);
  if (!self_client.ok()) return Fail("cannot open the in-process client", self_client.status());
  blocking_calls.set_client(self_client->get());
  auth_calls.set_client(self_client->get());
  // The Azure Blob lease adapter, on the same member.
  std::unique_ptr<BlobService> blob_service;
  std::unique_ptr<HttpServer> blob_server;
  if (!flags.listen_blob_url.empty()) {
    auto host_port = HostPortOfUrl(flags.listen_blob_url);
    if (!host_port.ok()) return Fail("bad --listen-blob-urls", host_port.status());
    if (flags.max_blob_bytes > flags.max_request_bytes - 65536) {
      return Fail(
          "bad --max-blob-bytes",
          absl::InvalidArgumentError("must leave 64 KiB of --max-request-bytes for headers"));
    }
    std::map<std::string, std::string> accounts;
    if (flags.blob_accounts.empty())
      accounts[std::string(kDevAccountName)] = std::string(kDevAccountKey);
    for (const auto& account : flags.blob_accounts) {
      const size_t colon = account.find(':');
      accounts[account.substr(0, colon)] = account.substr(colon + 1);
    }
    auto verifier = SharedKeyVerifier::Create(accounts);
    if (!verifier.ok()) return Fail("bad --blob-accounts", verifier.status());
    BlobService::Options blob_options;
    blob_options.max_blob_bytes = static_cast<uint64_t>(flags.max_blob_bytes);
    blob_options.endpoint =
        flags.listen_blob_url + (flags.listen_blob_url.back() == '/' ? "" : "/");
    blob_service = std::make_unique<BlobService>(&member, std::move(*verifier), blob_options);
    HttpServer::Options http_options = HttpListenOptions(*host_port);
    // An https:// URL is served with the client port's certificate (--cert-file, --key-file, ...).
    if (IsHttpsUrl(flags.listen_blob_url)) http_options.tls = flags.client_tls;
    http_options.body_limit_bytes = static_cast<uint64_t>(flags.max_blob_bytes);
    BlobService* service = blob_service.get();
    http_options.too_large = [service](const HttpRequest& request) {
      return service->TooLarge(request);
    };
    blob_server = std::make_unique<HttpServer>(
        http_options, [service](HttpRequest&& request, HttpServer::Respond respond) {
          service->Handle(std::move(request), std::move(respond));
        });
    if (absl::Status st = blob_server->Start(); !st.ok()) {
      // Only the default port may be given up: several members on one machine (as in etcd's own
      // examples, which know nothing of this flag) cannot all have it.
      if (flags.listen_blob_url_given) return Fail("cannot listen", st);
      LogWarn(
          "the blob adapter's default URL is taken; serving without the adapter "
          "(--listen-blob-urls names "
          "another, or turns it off when empty)",
          {{"blob-url", flags.listen_blob_url}, {"error", st.ToString()}});
      blob_server.reset();
      blob_service.reset();
    }
  }
  // /metrics and /health, as etcd's --listen-metrics-urls.
  std::unique_ptr<HttpServer> metrics_server;
  if (!flags.listen_metrics_url.empty()) {
    auto host_port = HostPortOfUrl(flags.listen_metrics_url);
    if (!host_port.ok()) return Fail("bad --listen-metrics-urls", host_port.status());
    HttpServer::Options http_options = HttpListenOptions(*host_port);
    if (IsHttpsUrl(flags.listen_metrics_url)) http_options.tls = flags.client_tls;  // as etcd's
    http_options.threads = 1;
    http_options.body_limit_bytes = 4096;
    metrics_server = std::make_unique<HttpServer>(
        http_options, [&health](HttpRequest&& request, HttpServer::Respond respond) {
          health.Handle(std::move(request), std::move(respond));
        });
    if (absl::Status st = metrics_server->Start(); !st.ok()) return Fail("cannot listen", st);
  }
  expiry.Start();
  compactor.Start();
  corruption_monitor.Start();
  char member_hex[17];
  std::snprintf(member_hex, sizeof member_hex, "%llx",
                static_cast<unsigned long long>(config.member_id));
  LogInfo("serving client requests",
          {{"name", flags.name},
           {"member-id", member_hex},
           {"data-dir", flags.data_dir},
           {"client-urls", flags.listen_client_urls.front()},
           {"blob-url", blob_server ? flags.listen_blob_url : "off"},
           {"revision", std::to_string((*state_machine)->revision())},
           {"leases", std::to_string((*state_machine)->leases().size())}});

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  int received = 0;
  sigwait(&signals, &received);
  LogInfo("shutting down", {{"signal", std::to_string(received)}});
  corruption_monitor.Stop();
  compactor.Stop();
  expiry.Stop();
  if (blob_server) blob_server->Stop();  // its answers still in flight are dropped with the node
  if (metrics_server) metrics_server->Stop();
  for (auto& http_server : client_http_servers) http_server->Stop();
  std::move(stop_watch_streams).Invoke();
  blocking_calls.Drain();  // before the in-process client and the services go
  auth_calls.Drain();
  peer_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  node.Stop();
  transport.Stop();
  return 0;
}

}  // namespace
}  // namespace leasehold::server

int main(int argc, char** argv) {
  // Block the shutdown signals before any thread starts, so only sigwait receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Lock-order checking costs a graph update per lock; the build's own tests and sanitizers cover
  // it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  if (argc > 1 && std::string(argv[1]) == "snapshot")
    return leasehold::server::RunSnapshotCommand(argc - 1, argv + 1);
  auto flags = leasehold::server::ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::cerr << "leasehold: " << flags.status().message() << "\n\n"
              << leasehold::server::FlagsUsage();
    return 2;
  }
  if (flags->help) {
    std::cout << leasehold::server::FlagsUsage();
    return 0;
  }
  if (flags->version) {
    std::cout << "leasehold 0.1.0 (etcd API 3.4)\n";
    return 0;
  }
  if (!leasehold::server::SetLogLevel(flags->log_level)) {
    std::cerr << "leasehold: invalid --log-level '" << flags->log_level << "'\n";
    return 2;
  }
  if (absl::Status st = leasehold::server::SetLogOutputs(flags->log_outputs); !st.ok()) {
    std::cerr << "leasehold: " << st.message() << "\n";
    return 2;
  }
  if (flags->logger == "capnslog") {
    leasehold::server::LogWarn("--logger=capnslog: logging as zap does, one JSON object per line");
  }
  if (!flags->lease_checkpoints) {
    // Without checkpoints a new leader would have only the grants' deadlines, and Leasehold's
    // promotion keeps deadlines rather than restarting every TTL as etcd 3.4's does.
    leasehold::server::LogWarn(
        "--experimental-enable-lease-checkpoint=false: lease checkpoints stay on (renewed "
        "deadlines survive a leader change)");
  }
  if (flags->enable_v2) {
    std::cerr << "leasehold: --enable-v2: etcd's v2 API is not served (only v3)\n";
    return 2;
  }
  if (flags->enable_pprof) {
    std::cerr
        << "leasehold: --enable-pprof: Go's profiler is etcd's own, not served here (use perf)\n";
    return 2;
  }
  if (!flags->unserved.empty()) {
    for (const std::string& message : flags->unserved)
      std::cerr << "leasehold: " << message << "\n";
    return 2;
  }
  for (const auto& [flag, why] : flags->ineffective_flags) {
    leasehold::server::LogWarn("--" + flag + " has no effect: " + why);
  }
  return leasehold::server::Serve(*std::move(flags));
}
