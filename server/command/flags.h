// Command-line flags, named and defaulted as etcd's where etcd has the same flag.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/url.h"
#include "server/tls/tls_files.h"

namespace leasehold::server {

struct Flags {
  std::string name = "default";
  std::string data_dir = "./data";
  std::string
      wal_dir;  // etcd's --wal-dir: the write-ahead log's own folder (empty: in the data dir)
  // etcd's flags that have nothing to act on here, given on the command line (each is warned
  // about):
  // --max-snapshots and --max-wals (etcd's file retention; Leasehold keeps no such files), and
  // bbolt's tuning (--backend-batch-interval, --backend-batch-limit,
  // --experimental-backend-bbolt-freelist-type).
  // (flag, why it has no effect), in the order given.
  std::vector<std::pair<std::string, std::string>> ineffective_flags;
  // etcd's features that Leasehold does not have, asked for by a flag given a value other than its
  // default ("--discovery: etcd's discovery service is not supported ..."): the start is refused.
  std::vector<std::string> unserved;
  bool enable_pprof = false;  // etcd's Go profiler on the client port: not served, so only false
  std::string metrics =
      "basic";  // etcd's --metrics: "extensive" adds gRPC handling-time histograms
  int64_t warning_apply_duration_us = 100'000;  // etcd's --experimental-warning-apply-duration
  // etcd's --experimental-corrupt-check-time: how often the leader compares its peers' hashes
  // with its own (corruption_monitor.h); 0, the default, never.
  int64_t corrupt_check_ms = 0;
  // etcd's --initial-election-tick-advance (election_tick_advance.h).
  bool initial_election_tick_advance = true;
  // etcd's --force-new-cluster: restart from this data as the cluster's only member
  // (force_new_cluster.h).
  bool force_new_cluster = false;
  std::vector<std::string> listen_client_urls = {"http://127.0.0.1:2379"};
  std::vector<std::string> advertise_client_urls;  // defaults to listen_client_urls
  std::vector<std::string> initial_advertise_peer_urls = {"http://127.0.0.1:2380"};
  std::string initial_cluster_token = "etcd-cluster";
  // name=peer-url pairs of the founding members; default: this member alone ("<name>=<peer urls>").
  std::string initial_cluster;
  std::string initial_cluster_state = "new";  // "new" or "existing"
  std::vector<std::string> listen_peer_urls = {"http://127.0.0.1:2380"};
  int64_t max_request_bytes = 1536 * 1024;
  int max_txn_ops = 128;
  int64_t max_concurrent_streams = 0xffffffffLL;  // per client connection, as etcd's
  int64_t quota_backend_bytes = 0;  // etcd's: 0 is the default 2 GiB, negative turns the quota off
  std::string log_level = "info";
  // etcd's --logger ("zap", the format Leasehold writes, or "capnslog") and --log-outputs
  // ("default" or "stderr", "stdout", or file paths; log.h).
  std::string logger = "zap";
  std::vector<std::string> log_outputs = {"default"};
  // etcd's --cors: origins whose web pages may read the client port's HTTP answers; empty or "*"
  // allows every origin (the default).
  std::vector<std::string> cors = {"*"};
  // etcd's --host-whitelist: host names a plain http:// client URL answers HTTP requests for
  // (against DNS rebinding); empty or "*" (the default): any.
  std::vector<std::string> host_whitelist = {"*"};
  // etcd's --cipher-suites: Go's names of the TLS 1.2 suites every TLS port allows (empty: the
  // defaults); see cipher_suites.h.
  std::vector<std::string> cipher_suites;
  // etcd's gRPC keepalive: pings more often than min_time get a client GOAWAY (too_many_pings); a
  // connection quiet for interval is pinged, and closed when no answer comes within timeout.
  int64_t grpc_keepalive_min_time_ms = 5'000;
  int64_t grpc_keepalive_interval_ms = 2 * 3600 * 1000;
  int64_t grpc_keepalive_timeout_ms = 20'000;
  // etcd's --enable-v2: the v2 API is not served, so only false is accepted (checked at start).
  bool enable_v2 = false;
  // etcd's --pre-vote (on here by default; etcd 3.4's default is off).
  bool pre_vote = true;
  // etcd's --experimental-enable-lease-checkpoint: checkpoints are always on here, so false only
  // warns (main.cc).
  bool lease_checkpoints = true;
  int64_t heartbeat_interval_ms = 100;
  int64_t election_timeout_ms = 1000;
  int lease_revoke_rate = 0;  // 0: expiry paced by its cost alone (expiry_loop.h)
  int64_t lease_checkpoint_interval_ms = 500;
  // etcd's --auto-compaction-mode and --auto-compaction-retention (auto_compactor.h); "0" is off.
  std::string auto_compaction_mode = "periodic";
  std::string auto_compaction_retention = "0";
  int64_t snapshot_count = 100000;
  // etcd's --experimental-snapshot-catchup-entries: log entries kept for slow followers after a
  // compaction (at most snapshot_count).
  int64_t snapshot_catchup_entries = 5000;
  int64_t watch_progress_notify_interval_ms = 10 * 60 * 1000;
  // The Azure Blob lease adapter: where it listens (empty, the default: off; like etcd, a member
  // opens only the ports it is given), its accounts ("name:base64key", default the storage
  // emulator's well-known account) and the largest Put Blob body.
  std::string listen_blob_url;
  std::vector<std::string> blob_accounts;
  int64_t max_blob_bytes = 1024 * 1024;
  // Where /metrics and /health are served over plain HTTP (empty: nowhere), as etcd's flag.
  std::string listen_metrics_url;
  TlsFiles client_tls;  // --cert-file, --key-file, --trusted-ca-file, --client-cert-auth
  TlsFiles peer_tls;    // --peer-cert-file, --peer-key-file, --peer-trusted-ca-file,
                        // --peer-client-cert-auth
  // etcd's v3 auth: simple tokens live this long after their last use on a member; passwords are
  // hashed with bcrypt at this cost; a wrong password is answered after this delay (ours).
  int64_t auth_token_ttl_seconds = 300;
  // --auth-token: "simple", or "jwt,pub-key=...,priv-key=...,sign-method=...[,ttl=...]"
  // (jwt_tokens.h).
  std::string auth_token = "simple";
  int bcrypt_cost = 10;
  int64_t auth_failure_delay_ms = 1000;
  // etcd's --strict-reconfig-check: refuse membership changes that the live members' connectivity
  // says could cost the quorum (NodeLoop::LeaderDecides).
  bool strict_reconfig_check = true;
  // etcd's --experimental-initial-corrupt-check (initial_corrupt_check.h).
  bool initial_corrupt_check = false;
  // etcd's --auto-tls and --peer-auto-tls (self_signed_cert.h).
  bool auto_tls = false;
  bool peer_auto_tls = false;
  // etcd's --enable-grpc-gateway: the JSON gateway on the client URLs.
  bool enable_grpc_gateway = true;
  // etcd's --config-file (config_file.h), when one was read, and its keys that named nothing.
  std::string config_file;
  std::vector<std::string> config_file_unknown_keys;
  bool help = false;
  bool version = false;
};

// Accepts --flag=value and --flag value, and, as etcd does, takes each flag not given from its
// ETCD_<FLAG> environment variable (e.g. ETCD_INITIAL_CLUSTER for --initial-cluster); a variable
// whose flag is also given is refused. With --config-file (or ETCD_CONFIG_FILE), the settings are
// the file's alone, as etcd's. InvalidArgument names the bad flag, variable or key.
[[nodiscard]] absl::StatusOr<Flags> ParseFlags(int argc, char** argv);
std::string FlagsUsage();

}  // namespace leasehold::server
