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
#include "server/command/backup_command.h"
#include "server/command/cluster_config.h"
#include "server/command/etcd_data_dir.h"
#include "server/command/flags.h"
#include "server/command/force_new_cluster.h"
#include "server/command/free_memory.h"
#include "server/command/identity.h"
#include "server/command/join.h"
#include "server/command/member_settings.h"
#include "server/command/ports.h"
#include "server/command/power_cut_fault.h"
#include "server/command/tls_flags.h"
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
#include "server/member/metrics_apply_observer.h"
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

int Fail(const std::string& what, const absl::Status& status) {
  LogError(what, {{"error", status.ToString()}});
  return 1;
}

int Serve(Flags flags) {
  auto cluster = BuildClusterConfig(flags);
  if (!cluster.ok()) return Fail("bad cluster configuration", cluster.status());
  if (absl::Status st = CheckTlsFlags(&flags); !st.ok()) return Fail("bad TLS configuration", st);
  absl::StatusOr<AutoCompaction> auto_compaction =
      ParseAutoCompaction(flags.auto_compaction_mode, flags.auto_compaction_retention);
  if (!auto_compaction.ok()) return Fail("bad auto compaction", auto_compaction.status());
  if (absl::StatusOr<bool> imported = ImportEtcdDataDir(flags.data_dir, flags.wal_dir);
      !imported.ok()) {
    return Fail("cannot open data dir", imported.status());
  }
  absl::StatusOr<std::shared_ptr<rocksdb::FileSystem>> power_cut = PowerCutFaultFromEnvironment();
  if (!power_cut.ok()) return Fail("bad fault injection", power_cut.status());
  auto engine = storage::Engine::Open(flags.data_dir, flags.wal_dir, *std::move(power_cut));
  if (!engine.ok()) return Fail("cannot open data dir", engine.status());
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
  MetricsApplyObserver apply_metrics;
  sm_options.observer = &apply_metrics;
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
  ReleaseFreeMemory();
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
  const int64_t request_timeout_ms = RequestTimeoutMs(flags);
  NodeLoop::Options node_options = NodeLoopOptionsFrom(flags, *identity, *cluster);
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

  MemberConfig config = MemberConfigFrom(flags, *identity);
  config.jwt = jwt.get();
  Member member(config, engine->get(), state_machine->get(), &node, &forwarder, &tokens);

  // The peer port first, so the node can hear its peers as soon as it starts.
  PeerPort peer_port(&member, &node);
  if (absl::Status st = peer_port.Start(flags); !st.ok()) return Fail("cannot listen", st);
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

  ExpiryLoop expiry(&member, ExpiryLoopOptionsFrom(flags));
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
  LockWaiters lock_waiters(&member, &watch_hub);
  LockService lock_service(&member, &blocking_calls, &lock_waiters);
  ElectionService election_service(&member, &blocking_calls);
  // Password hashing and checking get a small budget of their own: guessing cannot starve locks.
  BlockingCalls auth_calls(/*max_running=*/16);
  AuthService auth_service(&member, &auth_calls, absl::Milliseconds(flags.auth_failure_delay_ms));

  grpc::ServerBuilder builder;
  std::string grpc_tls_socket;
  if (absl::Status st = ConfigureClientGrpc(flags, builder, &grpc_tls_socket); !st.ok()) {
    return Fail("cannot listen", st);
  }
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
  HealthService health(&member, &watch_hub);
  Metrics::Get().SetServerVersion(config.version);
  JsonGateway gateway(server->InProcessChannel(grpc::ChannelArguments()));
  auto client_http_servers =
      StartClientHttp(flags, server.get(), grpc_tls_socket, &gateway, &health, config.version);
  if (!client_http_servers.ok()) return Fail("cannot listen", client_http_servers.status());
  // Lock and Election run etcd's recipes through a client of this very member.
  ClientOptions self_options;
  self_options.channel = server->InProcessChannel(grpc::ChannelArguments());
  self_options.request_timeout = absl::Milliseconds(request_timeout_ms);
  auto self_client = Client::Connect(self_options);
  if (!self_client.ok()) return Fail("cannot open the in-process client", self_client.status());
  blocking_calls.set_client(self_client->get());
  auth_calls.set_client(self_client->get());
  // The Azure Blob lease adapter, on the same member.
  auto blob = StartBlobAdapter(flags, &member);
  if (!blob.ok()) return Fail("cannot start the blob adapter", blob.status());
  // /metrics and /health, as etcd's --listen-metrics-urls.
  auto metrics_server = StartMetricsListener(flags, &health);
  if (!metrics_server.ok()) return Fail("cannot listen", metrics_server.status());
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
           {"blob-url", blob->server ? flags.listen_blob_url : "off"},
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
  if (blob->server) blob->server->Stop();  // its answers still in flight are dropped with the node
  if (*metrics_server) (*metrics_server)->Stop();
  for (auto& http_server : *client_http_servers) http_server->Stop();
  std::move(stop_watch_streams).Invoke();
  blocking_calls.Drain();  // before the in-process client and the services go
  auth_calls.Drain();
  peer_port.Stop();
  node.Stop();
  transport.Stop();
  RemoveUnixSockets(flags);
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
  if (!flags->config_file.empty()) {
    leasehold::server::LogInfo(
        "loaded server configuration, other configuration command line flags and environment "
        "variables will be ignored if provided",
        {{"path", flags->config_file}});
    for (const std::string& key : flags->config_file_unknown_keys) {
      leasehold::server::LogWarn("unknown key in the configuration file, ignored",
                                 {{"path", flags->config_file}, {"key", key}});
    }
  }
  for (const auto& [flag, why] : flags->ineffective_flags) {
    leasehold::server::LogWarn("--" + flag + " has no effect: " + why);
  }
  return leasehold::server::Serve(*std::move(flags));
}
