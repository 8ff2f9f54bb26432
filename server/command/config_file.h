// etcd's --config-file: a YAML file whose keys are etcd 3.4's configuration keys (those of its
// etcd.conf.yml.sample), read as etcd reads them, and turned into flag settings that go through
// the same checks as the command line.
//
// etcd's rules kept here: a key holds the value its flag takes, typed as etcd's Go configuration
// is (whole numbers for counts and for heartbeat-interval/election-timeout in milliseconds,
// integer nanoseconds for Go durations such as grpc-keepalive-min-time, true/false for switches,
// YAML lists for cipher-suites and log-outputs, comma-separated strings for URLs); an empty value
// leaves the default; the TLS settings live in the `client-transport-security` and
// `peer-transport-security` blocks (cert-file, key-file, client-cert-auth, trusted-ca-file,
// auto-tls). Leasehold's own flags (listen-blob-urls, lease-revoke-rate, ...) are read under
// their flag names, with their command-line syntax. Keys etcd does not know are ignored, as etcd
// ignores them, and reported so that the caller can warn.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leasehold::server {

struct ConfigFile {
  struct Setting {
    std::string key;   // as written in the file ("client-transport-security.cert-file")
    std::string flag;  // the flag it sets, without "--" ("cert-file")
    std::string value;
  };
  std::vector<Setting> settings;     // in the file's order
  std::vector<std::string> unknown;  // keys that name nothing, ignored
};

// Reads `path`. InvalidArgument names the file and, for a value of the wrong type, the key, as
// etcd's "cannot unmarshal ..." does; nothing is applied here.
[[nodiscard]] absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path,
                                                        const std::vector<std::string>& own_flags);

}  // namespace leasehold::server
