#include "server/command/config_file.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include <yaml-cpp/yaml.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/status_macros.h"

namespace leasehold::server {
namespace {

// How etcd's Go configuration types a key's value.
enum class Kind {
  kString,    // any scalar
  kCount,     // a whole number >= 0 (Go uint)
  kInteger,   // a whole number (Go int64: quota-backend-bytes may be negative)
  kBool,      // true/false (YAML 1.1 also yes/no/on/off, as etcd's YAML library reads them)
  kDuration,  // Go's time.Duration: integer nanoseconds (a Go duration string is accepted too)
  kList,      // a YAML list (one scalar is taken as a list of one)
};

struct Key {
  const char* flag;
  Kind kind;
};

// etcd 3.4's keys (embed.Config's JSON names and those of etcdmain's proxy settings), each with the
// flag it sets.
const std::map<std::string, Key>& EtcdKeys() {
  static const auto* keys = new std::map<std::string, Key>{
      {"name", {"name", Kind::kString}},
      {"data-dir", {"data-dir", Kind::kString}},
      {"wal-dir", {"wal-dir", Kind::kString}},
      {"snapshot-count", {"snapshot-count", Kind::kCount}},
      {"max-snapshots", {"max-snapshots", Kind::kCount}},
      {"max-wals", {"max-wals", Kind::kCount}},
      {"heartbeat-interval", {"heartbeat-interval", Kind::kCount}},
      {"election-timeout", {"election-timeout", Kind::kCount}},
      {"initial-election-tick-advance", {"initial-election-tick-advance", Kind::kBool}},
      {"backend-batch-interval", {"backend-batch-interval", Kind::kDuration}},
      {"backend-batch-limit", {"backend-batch-limit", Kind::kInteger}},
      {"quota-backend-bytes", {"quota-backend-bytes", Kind::kInteger}},
      {"max-txn-ops", {"max-txn-ops", Kind::kCount}},
      {"max-request-bytes", {"max-request-bytes", Kind::kCount}},
      {"max-concurrent-streams", {"max-concurrent-streams", Kind::kCount}},
      {"cipher-suites", {"cipher-suites", Kind::kList}},
      {"initial-cluster-state", {"initial-cluster-state", Kind::kString}},
      {"discovery-srv", {"discovery-srv", Kind::kString}},
      {"discovery-srv-name", {"discovery-srv-name", Kind::kString}},
      {"discovery-proxy", {"discovery-proxy", Kind::kString}},
      {"discovery", {"discovery", Kind::kString}},
      {"discovery-fallback", {"discovery-fallback", Kind::kString}},
      {"initial-cluster", {"initial-cluster", Kind::kString}},
      {"initial-cluster-token", {"initial-cluster-token", Kind::kString}},
      {"strict-reconfig-check", {"strict-reconfig-check", Kind::kBool}},
      {"enable-v2", {"enable-v2", Kind::kBool}},
      {"auto-compaction-mode", {"auto-compaction-mode", Kind::kString}},
      {"auto-compaction-retention", {"auto-compaction-retention", Kind::kString}},
      {"grpc-keepalive-min-time", {"grpc-keepalive-min-time", Kind::kDuration}},
      {"grpc-keepalive-interval", {"grpc-keepalive-interval", Kind::kDuration}},
      {"grpc-keepalive-timeout", {"grpc-keepalive-timeout", Kind::kDuration}},
      {"pre-vote", {"pre-vote", Kind::kBool}},
      {"auth-token", {"auth-token", Kind::kString}},
      {"bcrypt-cost", {"bcrypt-cost", Kind::kCount}},
      {"auth-token-ttl", {"auth-token-ttl", Kind::kCount}},
      {"experimental-initial-corrupt-check", {"experimental-initial-corrupt-check", Kind::kBool}},
      {"experimental-corrupt-check-time", {"experimental-corrupt-check-time", Kind::kDuration}},
      {"experimental-enable-v2v3", {"experimental-enable-v2v3", Kind::kString}},
      {"experimental-backend-bbolt-freelist-type",
       {"experimental-backend-bbolt-freelist-type", Kind::kString}},
      {"experimental-enable-lease-checkpoint",
       {"experimental-enable-lease-checkpoint", Kind::kBool}},
      {"experimental-enable-lease-checkpoint-persist",
       {"experimental-enable-lease-checkpoint-persist", Kind::kBool}},
      {"experimental-compaction-batch-limit",
       {"experimental-compaction-batch-limit", Kind::kInteger}},
      {"experimental-watch-progress-notify-interval",
       {"experimental-watch-progress-notify-interval", Kind::kDuration}},
      {"experimental-warning-apply-duration",
       {"experimental-warning-apply-duration", Kind::kDuration}},
      {"force-new-cluster", {"force-new-cluster", Kind::kBool}},
      {"enable-pprof", {"enable-pprof", Kind::kBool}},
      {"metrics", {"metrics", Kind::kString}},
      {"listen-metrics-urls", {"listen-metrics-urls", Kind::kString}},
      {"logger", {"logger", Kind::kString}},
      {"log-level", {"log-level", Kind::kString}},
      {"log-outputs", {"log-outputs", Kind::kList}},
      {"log-output", {"log-outputs", Kind::kList}},  // etcd's deprecated spelling
      {"enable-grpc-gateway", {"enable-grpc-gateway", Kind::kBool}},
      {"debug", {"debug", Kind::kBool}},
      {"log-package-levels", {"log-package-levels", Kind::kString}},
      {"unsafe-no-fsync", {"unsafe-no-fsync", Kind::kBool}},
      {"listen-peer-urls", {"listen-peer-urls", Kind::kString}},
      {"listen-client-urls", {"listen-client-urls", Kind::kString}},
      {"initial-advertise-peer-urls", {"initial-advertise-peer-urls", Kind::kString}},
      {"advertise-client-urls", {"advertise-client-urls", Kind::kString}},
      {"cors", {"cors", Kind::kString}},
      {"host-whitelist", {"host-whitelist", Kind::kString}},
      {"proxy", {"proxy", Kind::kString}},
      {"proxy-failure-wait", {"proxy-failure-wait", Kind::kCount}},
      {"proxy-refresh-interval", {"proxy-refresh-interval", Kind::kCount}},
      {"proxy-dial-timeout", {"proxy-dial-timeout", Kind::kCount}},
      {"proxy-write-timeout", {"proxy-write-timeout", Kind::kCount}},
      {"proxy-read-timeout", {"proxy-read-timeout", Kind::kCount}},
      // etcd 3.6's names for 3.4/3.5 experimental settings.
      {"corrupt-check-time", {"corrupt-check-time", Kind::kDuration}},
      {"watch-progress-notify-interval", {"watch-progress-notify-interval", Kind::kDuration}},
      {"warning-apply-duration", {"warning-apply-duration", Kind::kDuration}},
      {"compaction-batch-limit", {"compaction-batch-limit", Kind::kInteger}},
      {"snapshot-catchup-entries", {"snapshot-catchup-entries", Kind::kCount}},
      {"experimental-snapshot-catchup-entries", {"snapshot-catchup-entries", Kind::kCount}},
  };
  return *keys;
}

// The keys of the client-transport-security and peer-transport-security blocks, with the suffix of
// the flag each sets ("cert-file" -> --cert-file, --peer-cert-file).
const std::map<std::string, Key>& SecurityKeys() {
  static const auto* keys = new std::map<std::string, Key>{
      {"cert-file", {"cert-file", Kind::kString}},
      {"key-file", {"key-file", Kind::kString}},
      {"client-cert-auth", {"client-cert-auth", Kind::kBool}},
      {"trusted-ca-file", {"trusted-ca-file", Kind::kString}},
      {"auto-tls", {"auto-tls", Kind::kBool}},
  };
  return *keys;
}

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kString:
      return "a string";
    case Kind::kCount:
      return "a whole number";
    case Kind::kInteger:
      return "a whole number";
    case Kind::kBool:
      return "true or false";
    case Kind::kDuration:
      return "a duration in nanoseconds";
    case Kind::kList:
      return "a list";
  }
  return "";
}

// The flag value for `node` read as `kind`; nullopt when the node is not of that kind.
std::optional<std::string> FlagValue(const YAML::Node& node, Kind kind) {
  if (kind == Kind::kList || node.IsSequence()) {
    if (node.IsScalar()) return node.Scalar();
    if (!node.IsSequence()) return std::nullopt;
    std::vector<std::string> items;
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) return std::nullopt;
      items.push_back(item.Scalar());
    }
    return absl::StrJoin(items, ",");
  }
  if (!node.IsScalar()) return std::nullopt;
  const std::string& text = node.Scalar();
  int64_t number;
  switch (kind) {
    case Kind::kString:
      return text;
    case Kind::kCount:
      if (!absl::SimpleAtoi(text, &number) || number < 0) return std::nullopt;
      return text;
    case Kind::kInteger:
      if (!absl::SimpleAtoi(text, &number)) return std::nullopt;
      return text;
    case Kind::kBool: {
      bool on;
      if (!YAML::convert<bool>::decode(node, on)) return std::nullopt;
      return on ? "true" : "false";
    }
    case Kind::kDuration: {
      if (absl::SimpleAtoi(text, &number)) return absl::StrCat(number, "ns");
      absl::Duration parsed;
      if (!absl::ParseDuration(text, &parsed)) return std::nullopt;
      return text;
    }
    case Kind::kList:
      break;
  }
  return std::nullopt;
}

// Adds the setting of `key` (its flag `flag`) unless the value is empty, which leaves the default.
absl::Status AddSetting(const std::string& path, const std::string& key, const std::string& flag,
                        Kind kind, const YAML::Node& node, ConfigFile* out) {
  if (node.IsNull()) return absl::OkStatus();
  std::optional<std::string> value = FlagValue(node, kind);
  if (!value.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", key, " must be ", KindName(kind)));
  }
  if (value->empty()) return absl::OkStatus();
  out->settings.push_back({key, flag, std::move(*value)});
  return absl::OkStatus();
}

absl::Status AddSecurityBlock(const std::string& path, const std::string& block,
                              const std::string& flag_prefix, const YAML::Node& node,
                              ConfigFile* out) {
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", block, " must be a mapping"));
  }
  for (const auto& entry : node) {
    const std::string name = entry.first.as<std::string>();
    const std::string key = absl::StrCat(block, ".", name);
    auto it = SecurityKeys().find(name);
    if (it == SecurityKeys().end()) {
      out->unknown.push_back(key);
      continue;
    }
    RETURN_IF_ERROR(
        AddSetting(path, key, flag_prefix + it->second.flag, it->second.kind, entry.second, out));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path,
                                          const std::vector<std::string>& own_flags) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read the configuration file ", path));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not valid YAML: ", e.what()));
  }
  ConfigFile out;
  if (root.IsNull()) return out;
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a mapping of etcd's keys"));
  }
  try {
    for (const auto& entry : root) {
      if (!entry.first.IsScalar()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": a key is not a string"));
      }
      const std::string key = entry.first.Scalar();
      absl::Status st;
      if (key == "client-transport-security") {
        st = AddSecurityBlock(path, key, "", entry.second, &out);
      } else if (key == "peer-transport-security") {
        st = AddSecurityBlock(path, key, "peer-", entry.second, &out);
      } else if (auto it = EtcdKeys().find(key); it != EtcdKeys().end()) {
        st = AddSetting(path, key, it->second.flag, it->second.kind, entry.second, &out);
      } else if (std::find(own_flags.begin(), own_flags.end(), key) != own_flags.end()) {
        st = AddSetting(path, key, key, Kind::kString, entry.second, &out);
      } else {
        out.unknown.push_back(key);
      }
      if (!st.ok()) return st;
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  return out;
}

}  // namespace leasehold::server
