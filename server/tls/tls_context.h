// OpenSSL contexts (through Asio) for the TLS this process speaks itself: the HTTP ports, and both
// ends of every peer connection. etcd's rules for presented certificates (certificate_rules.h) are
// checked inside the handshake, and any refused certificate (untrusted, or against the rules) is
// answered with a bad_certificate alert, as Go's TLS stack answers it in etcd: the refused side
// learns of it ("remote error: tls: bad certificate") and can log it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <openssl/types.h>

#include "absl/status/statusor.h"
#include "boost/asio/ssl/context.hpp"
#include "server/tls/tls_files.h"

namespace leasehold::server {

// A listener's context: `files`' certificate and key, its cipher list, and with client_cert_auth
// a client certificate signed by trusted_ca_file, then etcd's rules. InvalidArgument names what
// is missing or unreadable. `port_name` ("client", "peer") names the port when a refusal is logged.
[[nodiscard]] absl::StatusOr<std::unique_ptr<boost::asio::ssl::context>> MakeServerTlsContext(
    const TlsFiles& files, std::string_view port_name);

// A peer dialer's context: presenting `files`' certificate when given, trusting trusted_ca_file
// (the system's roots when empty) and applying --peer-cert-allowed-cn/-hostname to the server's
// certificate, as etcd's dialer does (the revocation list is the listener's alone); with
// self-signed files (--peer-auto-tls), trusting any certificate, as etcd's peers do.
[[nodiscard]] absl::StatusOr<std::unique_ptr<boost::asio::ssl::context>> MakeDialerTlsContext(
    const TlsFiles& files);

// Before a dialer's handshake on `ssl`: the server's certificate must be valid for `host` (an IP
// address or a DNS name, which is also sent as SNI), unless the context trusts any certificate.
[[nodiscard]] absl::Status ExpectServerName(SSL* ssl, const TlsFiles& files,
                                            const std::string& host);

// Where a connection's handshake keeps why it refused the other side's certificate, in Go's words,
// so that HandshakeFailureText can say it; without one, a refusal by etcd's rules is logged at once
// (the HTTP ports). `reason` must outlive the handshake; null takes the slot away.
void KeepRefusalIn(SSL* ssl, std::string* reason);

// Why a handshake on `ssl` failed with `error`, in the words of Go's TLS stack that etcd logs:
// "remote error: tls: bad certificate" for an alert received, "EOF", "tls: first record does not
// look like a TLS handshake", `refusal` (KeepRefusalIn's) for a certificate this side refused...;
// OpenSSL's own words where Go has none.
std::string HandshakeFailureText(SSL* ssl, const boost::system::error_code& error,
                                 std::string_view refusal);

}  // namespace leasehold::server
