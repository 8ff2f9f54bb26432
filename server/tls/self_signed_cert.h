// Self-signed certificates for etcd's --auto-tls (client port) and --peer-auto-tls (peer port): a
// member without certificate files makes its own, so that traffic is encrypted though nobody can
// verify whom it talks to. Whoever dials such a port must skip verification (etcdctl's
// --insecure-skip-tls-verify; this member's peers, for --peer-auto-tls).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/tls/tls_files.h"

namespace leasehold::server {

// Makes `dir` (and its parents) and in it cert.pem and key.pem: a fresh ECDSA P-256 key and a
// certificate for it, signed by itself, valid for a year from now, naming each of `hosts`
// ("host:port" or "host"; IP addresses go in its IP SANs, names in its DNS SANs) and good for
// server and client authentication. When both files are already there they are kept, as etcd
// keeps them across restarts. Sets `files` to use them and marks it self-signed.
[[nodiscard]] absl::Status EnsureSelfSignedCert(const std::string& dir,
                                                const std::vector<std::string>& hosts,
                                                TlsFiles* files);

}  // namespace leasehold::server
