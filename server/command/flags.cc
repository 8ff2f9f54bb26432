#include "server/command/flags.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "server/command/config_file.h"
#include "server/observability/log.h"

namespace leasehold::server {
namespace {

struct FlagSpec {
  std::string help;
  std::function<bool(Flags*, const std::string&)> set;  // false: bad value
  bool boolean = false;
};

std::vector<std::string> SplitList(const std::string& v) {
  return absl::StrSplit(v, ',', absl::SkipEmpty());
}

template <typename T>
std::function<bool(Flags*, const std::string&)> Int(T Flags::*field, T min) {
  return [field, min](Flags* f, const std::string& v) {
    int64_t parsed;
    if (!absl::SimpleAtoi(v, &parsed) || parsed < min) return false;
    f->*field = static_cast<T>(parsed);
    return true;
  };
}

// A Go-style duration ("5s", "2h", "1m30s") at least a millisecond long and under 2^31 ms (gRPC's
// channel arguments are ints), into milliseconds.
std::function<bool(Flags*, const std::string&)> Millis(int64_t Flags::*field) {
  return [field](Flags* f, const std::string& v) {
    absl::Duration d;
    if (!absl::ParseDuration(v, &d) || d < absl::Milliseconds(1) ||
        d >= absl::Milliseconds(std::numeric_limits<int>::max())) {
      return false;
    }
    f->*field = absl::ToInt64Milliseconds(d);
    return true;
  };
}

bool IsCount(const std::string& v) {
  int64_t n;
  return absl::SimpleAtoi(v, &n) && n >= 0;
}

bool IsDuration(const std::string& v) {
  absl::Duration d;
  return absl::ParseDuration(v, &d) && d >= absl::ZeroDuration();
}

bool IsPositiveCount(const std::string& v) {
  int64_t n;
  return absl::SimpleAtoi(v, &n) && n > 0;
}

bool AnyValue(const std::string&) { return true; }

constexpr const char* kNoRetention =
    "Leasehold keeps no WAL or snapshot files (its Raft log is in RocksDB, compacted every "
    "--snapshot-count entries)";
constexpr const char* kNoBbolt = "Leasehold's storage is RocksDB, not bbolt";

// One of etcd's flags with nothing to act on here: its value is still checked with `valid`, and the
// flag is named in Flags::ineffective_flags with `why`, for a warning at start.
std::function<bool(Flags*, const std::string&)> Ineffective(const char* name, const char* why,
                                                            bool (*valid)(const std::string&)) {
  return [name, why, valid](Flags* f, const std::string& v) {
    f->ineffective_flags.emplace_back(name, why);
    return valid(v);
  };
}

// One of etcd's flags for a feature Leasehold does not have: its default (`off`) is accepted, as it
// asks for nothing; any other value is recorded in Flags::unserved with `message`, and the start is
// refused.
std::function<bool(Flags*, const std::string&)> Unserved(const char* name, const char* off,
                                                         const char* message) {
  return [name, off, message](Flags* f, const std::string& v) {
    if (v != off) f->unserved.push_back(absl::StrCat("--", name, ": ", message));
    return true;
  };
}

// etcd's settings of a feature Leasehold does not have (the v2 proxy, discovery) that act only when
// that feature is asked for: accepted, as etcd accepts them when it is off, after a check of the
// value.
std::function<bool(Flags*, const std::string&)> OnlyWith(bool (*valid)(const std::string&)) {
  return [valid](Flags*, const std::string& v) { return valid(v); };
}

// A boolean flag given alone ("--client-cert-auth") or with a value ("--client-cert-auth=false"),
// in any of the spellings Go's strconv.ParseBool reads (1, t, T, TRUE, true, True and the like).
bool ParseBool(const std::string& v, bool* out);
bool IsBool(const std::string& v) {
  bool ignored;
  return ParseBool(v, &ignored);
}

bool ParseBool(const std::string& v, bool* out) {
  static const std::set<std::string> kTrue = {"", "1", "t", "T", "TRUE", "true", "True"};
  static const std::set<std::string> kFalse = {"0", "f", "F", "FALSE", "false", "False"};
  if (kTrue.contains(v)) {
    *out = true;
  } else if (kFalse.contains(v)) {
    *out = false;
  } else {
    return false;
  }
  return true;
}

// etcd 3.6's --feature-gates: "Name=true,Other=false". A gate Leasehold does not know stops the
// start (as etcd's "unrecognized feature gate"); the known ones set what their 3.4 flags set.
bool SetFeatureGates(Flags* f, const std::string& v) {
  for (const std::string& gate : SplitList(v)) {
    const size_t eq = gate.find('=');
    bool on = false;
    if (eq == std::string::npos || !ParseBool(gate.substr(eq + 1), &on)) return false;
    std::string name = gate.substr(0, eq);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (name == "InitialCorruptCheck") {
      f->initial_corrupt_check = on;
    } else if (name == "LeaseCheckpoint") {
      f->lease_checkpoints = on;
    } else if (name == "LeaseCheckpointPersist") {
      f->ineffective_flags.emplace_back("feature-gates=LeaseCheckpointPersist",
                                        "checkpointed lease TTLs are always kept across restarts");
    } else if (name == "CompactHashCheck" || name == "StopGRPCServiceOnDefrag" ||
               name == "TxnModeWriteWithSharedBuffer") {
      f->ineffective_flags.emplace_back(
          "feature-gates=" + name, "a feature of etcd's own storage or checks, not Leasehold's");
    } else {
      return false;
    }
  }
  return true;
}

const std::map<std::string, FlagSpec>& Specs() {
  static auto* specs = new std::map<std::string, FlagSpec>{
      {"name", {"Human-readable name for this member.", [](Flags* f, const std::string& v) { f->name = v; return !v.empty(); }}},
      {"data-dir", {"Path to the data directory (an embedded RocksDB database).",
                    [](Flags* f, const std::string& v) { f->data_dir = v; return !v.empty(); }}},
      {"wal-dir", {"Folder for the write-ahead log, on a disk of its own if you like (default: in the data dir). A data dir must always be opened with the one it was made with.",
                   [](Flags* f, const std::string& v) { f->wal_dir = v; return true; }}},
      {"listen-client-urls", {"Comma-separated URLs to serve the etcd v3 gRPC API on (http://host:port).",
                              [](Flags* f, const std::string& v) { f->listen_client_urls = SplitList(v); return !f->listen_client_urls.empty(); }}},
      {"advertise-client-urls", {"Comma-separated client URLs advertised in member lists (default: the listen URLs).",
                                 [](Flags* f, const std::string& v) { f->advertise_client_urls = SplitList(v); return true; }}},
      {"initial-advertise-peer-urls", {"Comma-separated peer URLs advertised for this member.",
                                       [](Flags* f, const std::string& v) { f->initial_advertise_peer_urls = SplitList(v); return true; }}},
      {"initial-cluster-token", {"Cluster token, mixed into the cluster and member ids of a new data dir.",
                                 [](Flags* f, const std::string& v) { f->initial_cluster_token = v; return true; }}},
      {"initial-cluster", {"Initial cluster configuration for bootstrapping: name1=http://host:port,name2=... (default: this member alone).",
                           [](Flags* f, const std::string& v) { f->initial_cluster = v; return !v.empty(); }}},
      {"initial-cluster-state", {"'new' to found a cluster, 'existing' to join one (after 'etcdctl member add').",
                                 [](Flags* f, const std::string& v) { f->initial_cluster_state = v; return v == "new" || v == "existing"; }}},
      {"listen-peer-urls", {"Comma-separated URLs to listen on for peer traffic (Raft and forwarded lease calls).",
                            [](Flags* f, const std::string& v) { f->listen_peer_urls = SplitList(v); return !f->listen_peer_urls.empty(); }}},
      {"initial-election-tick-advance", {"On start, once connected to its peers, let most of an election timeout pass at once, for a faster first election (default true).",
                                         [](Flags* f, const std::string& v) { return ParseBool(v, &f->initial_election_tick_advance); }, true}},
      {"force-new-cluster", {"Restart from this member's data as the only member of its cluster (to recover from a lost quorum; the other members are removed).",
                             [](Flags* f, const std::string& v) { return ParseBool(v, &f->force_new_cluster); }, true}},
      {"experimental-initial-corrupt-check", {"Before serving, compare this member's key-value hash with its peers' and refuse to start on a mismatch.",
                                             [](Flags* f, const std::string& v) { return ParseBool(v, &f->initial_corrupt_check); }, true}},
      {"strict-reconfig-check", {"Reject membership changes that could cost the cluster its quorum (default true).",
                                 [](Flags* f, const std::string& v) { return ParseBool(v, &f->strict_reconfig_check); }, true}},
      {"max-request-bytes", {"Maximum client request size in bytes (etcd's default: 1572864).",
                             Int<int64_t>(&Flags::max_request_bytes, 1)}},
      {"quota-backend-bytes", {"Raise the NOSPACE alarm when the data dir would exceed this many bytes (0: etcd's 2 GiB; negative: no quota).",
                               Int<int64_t>(&Flags::quota_backend_bytes, std::numeric_limits<int64_t>::min())}},
      {"max-concurrent-streams", {"Maximum concurrent gRPC streams (calls) per client connection (etcd's default: unlimited).",
                                  Int<int64_t>(&Flags::max_concurrent_streams, 1)}},
      {"max-txn-ops", {"Maximum number of operations per branch of a transaction.", Int<int>(&Flags::max_txn_ops, 1)}},
      {"log-level", {"Log level: debug, info, warn or error.", [](Flags* f, const std::string& v) { f->log_level = v; return true; }}},
      {"debug", {"Log at debug level (as --log-level debug).",
                 [](Flags* f, const std::string& v) {
                   bool on = false;
                   if (!ParseBool(v, &on)) return false;
                   if (on) f->log_level = "debug";
                   return true;
                 }, true}},
      {"logger", {"'zap' (the default): one JSON object per line. 'capnslog' is accepted, and logs the same way.",
                  [](Flags* f, const std::string& v) { f->logger = v; return v == "zap" || v == "capnslog"; }}},
      {"log-outputs", {"Where logs go, comma-separated: 'default' or 'stderr' (the default), 'stdout', or file paths (appended to).",
                       [](Flags* f, const std::string& v) { f->log_outputs = SplitList(v); return !f->log_outputs.empty(); }}},
      {"cors", {"Comma-separated origins allowed to read the client port's HTTP answers (CORS); empty or * (the default) allows all.",
                [](Flags* f, const std::string& v) { f->cors = SplitList(v); return true; }}},
      {"enable-v2", {"etcd's v2 API: not served, so only false is accepted.",
                     [](Flags* f, const std::string& v) { return ParseBool(v, &f->enable_v2); }, true}},
      {"max-snapshots", {"etcd's snapshot file retention: no effect here (no snapshot files; the Raft log is compacted every --snapshot-count entries).",
                         Ineffective("max-snapshots", kNoRetention, IsCount)}},
      {"max-wals", {"etcd's WAL file retention: no effect here (the log lives in RocksDB, compacted every --snapshot-count entries).",
                    Ineffective("max-wals", kNoRetention, IsCount)}},
      {"experimental-corrupt-check-time", {"While leading, compare every other member's key-value hash with this member's this often, raising the CORRUPT alarm on a mismatch (a duration; default 0s, never).",
                                          [](Flags* f, const std::string& v) {
                                            absl::Duration d;
                                            if (!absl::ParseDuration(v, &d) || d < absl::ZeroDuration() ||
                                                d == absl::InfiniteDuration() ||
                                                (d > absl::ZeroDuration() && d < absl::Milliseconds(1))) {
                                              return false;
                                            }
                                            f->corrupt_check_ms = absl::ToInt64Milliseconds(d);
                                            return true;
                                          }}},
      {"experimental-warning-apply-duration", {"Log an entry whose apply takes longer than this (a duration; default 100ms).",
                                               [](Flags* f, const std::string& v) {
                                                 absl::Duration d;
                                                 if (!absl::ParseDuration(v, &d) || d <= absl::ZeroDuration()) return false;
                                                 f->warning_apply_duration_us = absl::ToInt64Microseconds(d);
                                                 return true;
                                               }}},
      {"metrics", {"'basic' (the default) or 'extensive', which adds grpc_server_handling_seconds histograms by method.",
                   [](Flags* f, const std::string& v) { f->metrics = v; return v == "basic" || v == "extensive"; }}},
      {"backend-batch-interval", {"etcd's bbolt commit interval: no effect here (RocksDB, whose writes are batched per Raft Ready).",
                                  Ineffective("backend-batch-interval", kNoBbolt, IsDuration)}},
      {"backend-batch-limit", {"etcd's bbolt commit batch size: no effect here (RocksDB, whose writes are batched per Raft Ready).",
                               Ineffective("backend-batch-limit", kNoBbolt, IsCount)}},
      {"experimental-backend-bbolt-freelist-type", {"etcd's bbolt freelist type ('map' or 'array'): no effect here (RocksDB).",
                                                    Ineffective("experimental-backend-bbolt-freelist-type", kNoBbolt,
                                                                [](const std::string& v) { return v == "map" || v == "array"; })}},
      {"experimental-compaction-batch-limit", {"etcd's number of old versions deleted per bbolt transaction while compacting: no effect here (a compaction deletes them in the one RocksDB write that applies it).",
                                               Ineffective("experimental-compaction-batch-limit",
                                                           "a compaction deletes the old versions in the one RocksDB write that applies it",
                                                           IsPositiveCount)}},
      {"experimental-peer-skip-client-san-verification",
       {"Under --peer-client-cert-auth, do not check that a peer's certificate names the address it connects from (its IP, or a DNS name resolving to it); default false.",
        [](Flags* f, const std::string& v) { return ParseBool(v, &f->peer_tls.skip_client_san_verify); }, true}},
      {"log-package-levels", {"capnslog's per-package log levels: no effect here (use --log-level).",
                              [](Flags* f, const std::string& v) {
                                if (!v.empty()) {
                                  f->ineffective_flags.emplace_back("log-package-levels",
                                                                    "Leasehold logs as zap does, at one --log-level");
                                }
                                return true;
                              }}},
      {"discovery", {"etcd's discovery service: not supported, so only empty is accepted (name the members with --initial-cluster).",
                     Unserved("discovery", "", "etcd's discovery service is not supported: name the members with --initial-cluster")}},
      {"discovery-srv", {"DNS SRV discovery: not supported, so only empty is accepted (name the members with --initial-cluster).",
                         Unserved("discovery-srv", "", "DNS SRV discovery is not supported: name the members with --initial-cluster")}},
      {"discovery-srv-name", {"The suffix of DNS SRV discovery's records: acts only with --discovery-srv.", OnlyWith(AnyValue)}},
      {"discovery-proxy", {"The HTTP proxy for the discovery service: acts only with --discovery.", OnlyWith(AnyValue)}},
      {"discovery-fallback", {"'exit' or 'proxy', when discovery fails: acts only with --discovery.",
                              OnlyWith([](const std::string& v) { return v == "exit" || v == "proxy"; })}},
      {"proxy", {"etcd's v2 proxy mode: not supported, so only 'off' is accepted.",
                 [](Flags* f, const std::string& v) {
                   if (v != "off" && v != "readonly" && v != "on") return false;
                   return Unserved("proxy", "off", "etcd's v2 proxy is not supported (only 'off')")(f, v);
                 }}},
      {"proxy-failure-wait", {"A v2 proxy setting (milliseconds): acts only with --proxy.", OnlyWith(IsCount)}},
      {"proxy-refresh-interval", {"A v2 proxy setting (milliseconds): acts only with --proxy.", OnlyWith(IsCount)}},
      {"proxy-dial-timeout", {"A v2 proxy setting (milliseconds): acts only with --proxy.", OnlyWith(IsCount)}},
      {"proxy-write-timeout", {"A v2 proxy setting (milliseconds): acts only with --proxy.", OnlyWith(IsCount)}},
      {"proxy-read-timeout", {"A v2 proxy setting (milliseconds): acts only with --proxy.", OnlyWith(IsCount)}},
      {"experimental-enable-v2v3", {"etcd's v2 API emulated on v3 under a prefix: not served, so only empty is accepted.",
                                    Unserved("experimental-enable-v2v3", "", "etcd's v2 API is not served (only v3)")}},
      {"config-file", {"etcd's YAML configuration file (the keys of etcd.conf.yml.sample; see docs/flags.md). When given, the other flags and ETCD_* variables are ignored, as etcd ignores them.",
                       [](Flags* f, const std::string& v) { f->config_file = v; return !v.empty(); }}},
      {"enable-grpc-gateway", {"Serve etcd's JSON gateway (/v3/...) on the client URLs (default true).",
                               [](Flags* f, const std::string& v) { return ParseBool(v, &f->enable_grpc_gateway); }, true}},
      {"experimental-enable-lease-checkpoint-persist", {"etcd's switch to keep checkpointed lease TTLs across restarts: no effect here (they are always kept, as in etcd 3.6).",
                                                        Ineffective("experimental-enable-lease-checkpoint-persist",
                                                                    "checkpointed lease TTLs are always kept across restarts",
                                                                    [](const std::string& v) { bool b; return ParseBool(v, &b); })}},
      {"unsafe-no-fsync", {"etcd's switch to skip fsync: no effect here (every write is fsynced on a quorum before it is acknowledged).",
                           Ineffective("unsafe-no-fsync", "every write is fsynced before it is acknowledged",
                                       [](const std::string& v) { bool b; return ParseBool(v, &b); }), true}},
      {"enable-pprof", {"etcd's Go profiler (/debug/pprof): not served, so only false is accepted.",
                        [](Flags* f, const std::string& v) { return ParseBool(v, &f->enable_pprof); }, true}},
      {"pre-vote", {"Raft's pre-vote: a member cut off and back does not disrupt the leader (default true here).",
                    [](Flags* f, const std::string& v) { return ParseBool(v, &f->pre_vote); }, true}},
      {"experimental-enable-lease-checkpoint", {"Checkpoint renewed lease deadlines, so a new leader keeps them: always on here (false only warns).",
                                                [](Flags* f, const std::string& v) { return ParseBool(v, &f->lease_checkpoints); }, true}},
      {"heartbeat-interval", {"Time (ms) of a heartbeat interval; with --election-timeout it sets the minimum lease TTL.",
                              Int<int64_t>(&Flags::heartbeat_interval_ms, 1)}},
      {"election-timeout", {"Time (ms) of an election timeout; the minimum lease TTL is ceil(1.5 x this) seconds.",
                            Int<int64_t>(&Flags::election_timeout_ms, 1)}},
      {"lease-revoke-rate", {"Maximum expired leases revoked per second; 0 (the default) revokes them as fast as the log commits them.", Int<int>(&Flags::lease_revoke_rate, 0)}},
      {"snapshot-count", {"Number of applied entries after which the Raft log is compacted (a follower further behind gets a snapshot).",
                          Int<int64_t>(&Flags::snapshot_count, 1)}},
      {"experimental-snapshot-catchup-entries", {"Log entries kept after a compaction for slow followers to catch up from (default 5000, at most --snapshot-count).",
                                                Int<int64_t>(&Flags::snapshot_catchup_entries, 1)}},
      {"auto-compaction-mode", {"'periodic' (the default) or 'revision': how --auto-compaction-retention is read.",
                                [](Flags* f, const std::string& v) { f->auto_compaction_mode = v; return true; }}},
      {"auto-compaction-retention", {"History the leader keeps when it compacts on its own: in periodic mode a duration ('30m'; a whole number counts hours), in revision mode a number of revisions; 0 (the default) turns it off.",
                                     [](Flags* f, const std::string& v) { f->auto_compaction_retention = v; return true; }}},
      {"lease-checkpoint-interval", {"Time (ms) between checkpoints of renewed lease deadlines.",
                                     Int<int64_t>(&Flags::lease_checkpoint_interval_ms, 10)}},
      {"experimental-watch-progress-notify-interval",
       {"How often idle watchers that asked for progress notifications get one (a duration: 10m, 5s, 200ms).",
        [](Flags* f, const std::string& v) {
          absl::Duration d;
          if (!absl::ParseDuration(v, &d) || d < absl::Milliseconds(10)) return false;
          f->watch_progress_notify_interval_ms = absl::ToInt64Milliseconds(d);
          return true;
        }}},
      {"listen-blob-urls", {"URL for the Azure Blob lease REST adapter (http(s)://host:port, e.g. the storage emulator's http://127.0.0.1:10000). Default empty: off.",
                            [](Flags* f, const std::string& v) {
                              f->listen_blob_url = v;
                              return v.find(',') == std::string::npos;
                            }}},
      {"blob-accounts", {"Comma-separated name:base64key storage accounts for the blob adapter (default: devstoreaccount1 with the emulator's well-known key).",
                         [](Flags* f, const std::string& v) {
                           f->blob_accounts = SplitList(v);
                           for (const auto& a : f->blob_accounts) {
                             if (a.find(':') == std::string::npos || a.front() == ':') return false;
                           }
                           return !f->blob_accounts.empty();
                         }}},
      {"max-blob-bytes", {"Largest Put Blob body accepted by the blob adapter (default 1048576; at most --max-request-bytes - 65536).",
                          Int<int64_t>(&Flags::max_blob_bytes, 1)}},
      {"listen-metrics-urls", {"URL to serve /metrics (Prometheus) and /health on (http://host:port; default: off).",
                               [](Flags* f, const std::string& v) { f->listen_metrics_url = v; return v.find(',') == std::string::npos; }}},
      {"cert-file", {"Client port TLS certificate (PEM), for https:// client URLs.",
                     [](Flags* f, const std::string& v) { f->client_tls.cert_file = v; return !v.empty(); }}},
      {"key-file", {"Client port TLS private key (PEM).",
                    [](Flags* f, const std::string& v) { f->client_tls.key_file = v; return !v.empty(); }}},
      {"trusted-ca-file", {"CA certificates (PEM) that client certificates must be signed by.",
                           [](Flags* f, const std::string& v) { f->client_tls.trusted_ca_file = v; return !v.empty(); }}},
      {"client-cert-auth", {"Refuse clients without a certificate signed by --trusted-ca-file.",
                            [](Flags* f, const std::string& v) { return ParseBool(v, &f->client_tls.client_cert_auth); }, true}},
      {"client-crl-file", {"Certificate revocation list (PEM or DER) that client certificates are checked against, read again for each connection.",
                           [](Flags* f, const std::string& v) { f->client_tls.crl_file = v; return true; }}},
      {"client-cert-allowed-hostname", {"Host name (or IP address) that client certificates must be valid for.",
                                        [](Flags* f, const std::string& v) { f->client_tls.allowed_hostname = v; return true; }}},
      {"peer-cert-file", {"Peer TLS certificate (PEM), served on https:// peer URLs and presented to peers.",
                          [](Flags* f, const std::string& v) { f->peer_tls.cert_file = v; return !v.empty(); }}},
      {"peer-key-file", {"Peer TLS private key (PEM).",
                         [](Flags* f, const std::string& v) { f->peer_tls.key_file = v; return !v.empty(); }}},
      {"peer-trusted-ca-file", {"CA certificates (PEM) that peers' certificates must be signed by.",
                                [](Flags* f, const std::string& v) { f->peer_tls.trusted_ca_file = v; return !v.empty(); }}},
      {"peer-client-cert-auth", {"Refuse peers without a certificate signed by --peer-trusted-ca-file.",
                                 [](Flags* f, const std::string& v) { return ParseBool(v, &f->peer_tls.client_cert_auth); }, true}},
      {"peer-crl-file", {"Certificate revocation list (PEM or DER) that peers' certificates are checked against, read again for each connection.",
                         [](Flags* f, const std::string& v) { f->peer_tls.crl_file = v; return true; }}},
      {"peer-cert-allowed-cn", {"Common name that peers' certificates must carry.",
                                [](Flags* f, const std::string& v) { f->peer_tls.allowed_cn = v; return true; }}},
      {"peer-cert-allowed-hostname", {"Host name (or IP address) that peers' certificates must be valid for.",
                                      [](Flags* f, const std::string& v) { f->peer_tls.allowed_hostname = v; return true; }}},
      {"host-whitelist", {"Comma-separated host names a plain http:// client URL answers HTTP requests for, against DNS rebinding; empty or * (the default) allows all.",
                          [](Flags* f, const std::string& v) { f->host_whitelist = SplitList(v); return true; }}},
      {"cipher-suites", {"Comma-separated TLS cipher suites (Go's names) allowed on every TLS port, for TLS 1.2; TLS 1.3's are always on (default: the library's).",
                         [](Flags* f, const std::string& v) { f->cipher_suites = SplitList(v); return true; }}},
      {"auto-tls", {"Client TLS with a certificate this member makes itself, when --cert-file/--key-file are not given.",
                    [](Flags* f, const std::string& v) { return ParseBool(v, &f->auto_tls); }, true}},
      {"peer-auto-tls", {"Peer TLS with a certificate this member makes itself, when --peer-cert-file/--peer-key-file are not given; peers are then not verified.",
                         [](Flags* f, const std::string& v) { return ParseBool(v, &f->peer_auto_tls); }, true}},
      {"auth-token", {"Token type for v3 auth: 'simple' (the default) or 'jwt,pub-key=FILE,priv-key=FILE,sign-method=RS256[,ttl=5m]' (RS/PS/ES 256/384/512).",
                      [](Flags* f, const std::string& v) {
                        f->auth_token = v;
                        return v == "simple" || v == "jwt" || v.rfind("jwt,", 0) == 0;
                      }}},
      {"auth-token-ttl", {"Seconds a simple token stays valid after its last use (etcd's default: 300).",
                          Int<int64_t>(&Flags::auth_token_ttl_seconds, 1)}},
      {"bcrypt-cost", {"bcrypt cost for hashing v3 auth passwords, 4..31 (etcd's default: 10).",
                       [](Flags* f, const std::string& v) {
                         int parsed;
                         if (!absl::SimpleAtoi(v, &parsed) || parsed < 4 || parsed > 31) return false;
                         f->bcrypt_cost = parsed;
                         return true;
                       }}},
      {"grpc-keepalive-min-time", {"Minimum time a client should wait between pings; a client pinging more often is sent GOAWAY (default 5s).",
                                   Millis(&Flags::grpc_keepalive_min_time_ms)}},
      {"grpc-keepalive-interval", {"How long a connection may stay quiet before the server pings it (default 2h).",
                                   Millis(&Flags::grpc_keepalive_interval_ms)}},
      {"grpc-keepalive-timeout", {"How long the server waits for a ping's answer before it closes the connection (default 20s).",
                                  Millis(&Flags::grpc_keepalive_timeout_ms)}},
      {"auth-failure-delay", {"How long a wrong password waits before it is refused, against guessing (a duration; default 1s).",
                              [](Flags* f, const std::string& v) {
                                absl::Duration d;
                                if (!absl::ParseDuration(v, &d) || d < absl::ZeroDuration()) return false;
                                f->auth_failure_delay_ms = absl::ToInt64Milliseconds(d);
                                return true;
                              }}},
      {"feature-gates", {"etcd 3.6's feature gates, comma-separated Name=true|false: InitialCorruptCheck, LeaseCheckpoint and LeaseCheckpointPersist act as their --experimental- flags; CompactHashCheck, StopGRPCServiceOnDefrag and TxnModeWriteWithSharedBuffer are accepted with no effect.",
                         SetFeatureGates}},
      {"help", {"Print this help and exit.", [](Flags* f, const std::string&) { f->help = true; return true; }, true}},
      {"version", {"Print the version and exit.", [](Flags* f, const std::string&) { f->version = true; return true; }, true}},
  };
  // etcd 3.5's experimental knobs of its own storage, logging and tracing: accepted with their
  // value checked, and warned to have no effect (tracing asked for stops the start).
  struct Knob {
    const char* name;
    bool (*valid)(const std::string&);
    bool boolean;
  };
  static const Knob kEtcd35Knobs[] = {
      {"compaction-sleep-interval", IsDuration, false},
      {"bootstrap-defrag-threshold-megabytes", IsCount, false},
      {"memory-mlock", IsBool, true},
      {"downgrade-check-time", IsDuration, false},
      {"compact-hash-check-enabled", IsBool, true},
      {"compact-hash-check-time", IsDuration, false},
      {"max-learners", IsPositiveCount, false},
      {"warning-unary-request-duration", IsDuration, false},
      {"stop-grpc-service-on-defrag", IsBool, true},
      {"txn-mode-write-with-shared-buffer", IsBool, true},
  };
  static const bool knobs_added = [] {
    for (const Knob& knob : kEtcd35Knobs) {
      FlagSpec spec{std::string("etcd 3.5's --experimental-") + knob.name + ": no effect here.",
                    Ineffective(knob.name, "a setting of etcd's own implementation", knob.valid),
                    knob.boolean};
      specs->emplace(std::string("experimental-") + knob.name, spec);
    }
    specs->emplace(
        "experimental-enable-distributed-tracing",
        FlagSpec{
            "etcd's OpenTelemetry tracing: not served, so only false is accepted.",
            [](Flags* f, const std::string& v) {
              bool on = false;
              if (!ParseBool(v, &on)) return false;
              if (on)
                f->unserved.push_back(
                    "--enable-distributed-tracing: etcd's distributed tracing is not supported");
              return true;
            },
            true});
    for (const char* name : {"address", "service-name", "instance-id", "sampling-rate"}) {
      specs->emplace(
          std::string("experimental-distributed-tracing-") + name,
          FlagSpec{"A tracing setting: acts only with distributed tracing.", OnlyWith(AnyValue)});
    }
    return true;
  }();
  (void)knobs_added;
  // etcd 3.6 took these out of --experimental- (keeping the old names): both spellings are read.
  static const bool aliased = [] {
    std::vector<std::string> names = {"corrupt-check-time",
                                      "compaction-batch-limit",
                                      "watch-progress-notify-interval",
                                      "warning-apply-duration",
                                      "peer-skip-client-san-verification",
                                      "backend-bbolt-freelist-type",
                                      "snapshot-catchup-entries",
                                      "enable-distributed-tracing",
                                      "distributed-tracing-address",
                                      "distributed-tracing-service-name",
                                      "distributed-tracing-instance-id",
                                      "distributed-tracing-sampling-rate"};
    for (const Knob& knob : kEtcd35Knobs) names.push_back(knob.name);
    for (const std::string& name : names) {
      FlagSpec spec = specs->at("experimental-" + name);
      spec.help = "etcd 3.6's name for --experimental-" + name + ".";
      specs->emplace(name, std::move(spec));
    }
    return true;
  }();
  (void)aliased;
  return *specs;
}

}  // namespace

std::string FlagsUsage() {
  std::string out =
      "usage: leasehold [flags]\n"
      "       leasehold snapshot status|restore ...   (see leasehold snapshot --help)\n\n"
      "Leasehold serves the etcd v3 gRPC API (KV, Lease, Watch, Maintenance, Cluster) from a "
      "RocksDB\n"
      "data directory, replicated with Raft across the members named in "
      "--initial-cluster.\n\nflags:\n";
  for (const auto& [name, spec] : Specs())
    absl::StrAppend(&out, "  --", name, "\n      ", spec.help, "\n");
  return out;
}

namespace {

// ETCD_ followed by the flag's name in upper case, '-' as '_' (etcd's FlagToEnv).
std::string EnvironmentKey(const std::string& flag) {
  std::string key = "ETCD_" + absl::AsciiStrToUpper(flag);
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

// etcd's configuration by environment: each flag not on the command line is read from its
// ETCD_<FLAG> variable when that is set and not empty, and logged as etcd logs it. ETCD_ variables
// that name no flag are warned of; one whose flag is also on the command line stops the start, as
// etcd's does.
absl::Status ApplyEnvironment(const std::set<std::string>& given, Flags* flags) {
  std::set<std::string> used, shadowed;
  for (const auto& [name, spec] : Specs()) {
    const std::string key = EnvironmentKey(name);
    if (given.contains(name)) {
      shadowed.insert(key);
      continue;
    }
    const char* value = std::getenv(key.c_str());
    if (value == nullptr || *value == '\0') continue;
    used.insert(key);
    if (!spec.set(flags, value)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid value \"", value, "\" for ", key));
    }
    LogInfo("recognized and used environment variable",
            {{"variable-name", key}, {"variable-value", value}});
  }
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    const std::string key(variable.substr(0, variable.find('=')));
    if (used.contains(key)) continue;
    if (shadowed.contains(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("conflicting environment variable \"", key,
                       "\" is shadowed by corresponding command-line flag (either unset "
                       "environment variable or disable flag)"));
    }
    if (key.starts_with("ETCD_")) {
      LogWarn("unrecognized environment variable",
              {{"environment-variable", std::string(variable)}});
    }
  }
  return absl::OkStatus();
}

// etcd's --config-file: the file's settings over the defaults, each checked as its flag is; the
// command line and the environment are left out, as etcd leaves them.
absl::StatusOr<Flags> FlagsFromConfigFile(const std::string& path) {
  std::vector<std::string> own_flags;
  for (const auto& [name, spec] : Specs()) {
    if (name != "help" && name != "version" && name != "config-file") own_flags.push_back(name);
  }
  absl::StatusOr<ConfigFile> file = ReadConfigFile(path, own_flags);
  if (!file.ok()) return file.status();
  Flags flags;
  flags.config_file = path;
  flags.config_file_unknown_keys = std::move(file->unknown);
  for (const ConfigFile::Setting& setting : file->settings) {
    auto it = Specs().find(setting.flag);
    if (it == Specs().end() || !it->second.set(&flags, setting.value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": invalid value \"", setting.value, "\" for ", setting.key));
    }
  }
  return flags;
}

}  // namespace

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  std::set<std::string> given;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (arg.rfind("--", 0) != 0) return absl::InvalidArgumentError("unexpected argument: " + arg);
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = Specs().find(name);
    if (it == Specs().end()) return absl::InvalidArgumentError("unknown flag: --" + name);
    if (!has_value && !it->second.boolean) {
      if (i + 1 >= argc) return absl::InvalidArgumentError("flag needs a value: --" + name);
      value = argv[++i];
    }
    if (!it->second.set(&flags, value)) {
      return absl::InvalidArgumentError("invalid value for --" + name + ": '" + value + "'");
    }
    given.insert(name);
  }
  if (flags.config_file.empty() && !given.contains("config-file")) {
    if (const char* path = std::getenv("ETCD_CONFIG_FILE"); path != nullptr)
      flags.config_file = path;
  }
  if (!flags.config_file.empty() && !flags.help && !flags.version) {
    absl::StatusOr<Flags> from_file = FlagsFromConfigFile(flags.config_file);
    if (!from_file.ok()) return from_file.status();
    flags = std::move(*from_file);
  } else if (absl::Status st = ApplyEnvironment(given, &flags); !st.ok()) {
    return st;
  }
  if (flags.advertise_client_urls.empty()) flags.advertise_client_urls = flags.listen_client_urls;
  if (flags.initial_cluster.empty()) {
    for (const auto& url : flags.initial_advertise_peer_urls) {
      absl::StrAppend(&flags.initial_cluster, flags.initial_cluster.empty() ? "" : ",", flags.name,
                      "=", url);
    }
  }
  return flags;
}

}  // namespace leasehold::server
