// etcd's rules for a certificate a client or peer presents over TLS, beyond being signed by a
// trusted CA: a revocation list (--client-crl-file, --peer-crl-file), a required common name
// (--peer-cert-allowed-cn) or a host name the certificate must be valid for
// (--client-cert-allowed-hostname, --peer-cert-allowed-hostname). Applied, as etcd applies them,
// only to certificates that were asked for and verified (--client-cert-auth,
// --peer-client-cert-auth); the gRPC ports and the HTTP ports (blob adapter, /metrics) share them.
//
// As etcd's: the revocation list is read again for every connection, so a new one applies without
// a restart; it revokes by serial number, whoever the issuer; a host name matches the certificate's
// DNS or IP subject alternative names only (never its common name), with a wildcard for exactly one
// leftmost label.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <openssl/types.h>

#include "absl/status/status.h"
#include "server/tls/tls_files.h"

namespace leasehold::server {

// Whether `files` sets any rule to check.
bool HasCertificateRules(const TlsFiles& files);

// The rules' own errors, for start-up: a common name and a host name together (etcd refuses
// them with "AllowedCN and AllowedHostname are mutually exclusive ..."), or a revocation list that
// cannot be read or parsed. InvalidArgument naming the flag's value.
[[nodiscard]] absl::Status ValidateCertificateRules(const TlsFiles& files);

// Checks `presented` (the leaf first, then what else the other side sent) against the rules.
// OK, or PermissionDenied with etcd's reason ("client certificate authentication failed",
// "transport: certificate serial <hex> revoked"), or InvalidArgument when the revocation list has
// become unreadable. An empty `presented` passes: nothing was asked for.
[[nodiscard]] absl::Status CheckPresentedCertificates(const TlsFiles& files,
                                                      const std::vector<X509*>& presented);

// The same, for certificates in PEM (`chain_pem`: the leaf first; a repeat of the leaf later on
// is skipped).
[[nodiscard]] absl::Status CheckPresentedPem(const TlsFiles& files, std::string_view chain_pem);

// A certificate's subject alternative names, in its order: IP addresses as text, DNS names.
// `malformed_ip` when an IP name is neither 4 nor 16 bytes long.
struct AltNames {
  std::vector<std::string> ips;
  std::vector<std::string> dns;
  bool malformed_ip = false;
};
AltNames AltNamesOf(X509* cert);

// Why `cert` is not valid for the host name or IP address `host`, in Go's words (x509's
// HostnameError): "x509: certificate is valid for 10.0.0.1, not 10.0.0.2", ...
std::string GoHostnameError(X509* cert, const std::string& host);

// Logs a refused connection, as etcd logs one ("rejected connection", with the reason).
void LogRejectedCertificate(std::string_view port, const absl::Status& why);

}  // namespace leasehold::server
