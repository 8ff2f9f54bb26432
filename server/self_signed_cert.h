// Self-signed certificates for etcd's --auto-tls (client port) and --peer-auto-tls (peer port): a
// member without certificate files makes its own, so that traffic is encrypted though nobody can
// verify whom it talks to. Whoever dials such a port must skip verification (etcdctl's
// --insecure-skip-tls-verify; this member's peers, for --peer-auto-tls).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/flags.h"

namespace leasehold::server {

// Makes `dir` (and its parents) and in it cert.pem and key.pem: a fresh ECDSA P-256 key and a
// certificate for it, signed by itself, valid for a year from now, naming each of `hosts`
// ("host:port" or "host"; IP addresses go in its IP SANs, names in its DNS SANs) and good for
// server and client authentication. When both files are already there they are kept, as etcd
// keeps them across restarts. Sets `files` to use them and marks it self-signed.
absl::Status EnsureSelfSignedCert(const std::string& dir, const std::vector<std::string>& hosts, TlsFiles* files);

// etcd's handling of the two flags, before anything listens: for each one set, a port given no
// certificate and key gets a self-signed pair in <data-dir>/fixtures/client or .../peer for the
// hosts of its listen URLs; a port given them keeps them, with etcd's warning.
absl::Status ApplyAutoTls(Flags* flags);

}  // namespace leasehold::server
