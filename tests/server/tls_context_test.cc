#include "server/tls/tls_context.h"

#include <string>

#include <openssl/ssl.h>

#include "boost/asio/io_context.hpp"
#include "boost/asio/local/connect_pair.hpp"
#include "boost/asio/local/stream_protocol.hpp"
#include "boost/asio/read.hpp"
#include "boost/asio/ssl/stream.hpp"
#include "boost/asio/write.hpp"
#include "gtest/gtest.h"
#include "server/tls/self_signed_cert.h"
#include "storage/temp_dir.h"

namespace leasehold::server {
namespace {

namespace asio = boost::asio;
using Local = asio::local::stream_protocol;

// What each end of one connection saw: "ok" when its handshake passed and a byte went each way,
// otherwise HandshakeFailureText's words for its first failure.
struct Outcome {
  std::string listener;
  std::string dialer;
};

class TlsContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two self-signed certificates for 127.0.0.1 (no common name): each is its own CA.
    ASSERT_TRUE(EnsureSelfSignedCert(dir_.Sub("a"), {"127.0.0.1"}, &a_).ok());
    ASSERT_TRUE(EnsureSelfSignedCert(dir_.Sub("b"), {"127.0.0.1"}, &b_).ok());
    a_.self_signed = b_.self_signed = false;
    a_.trusted_ca_file = a_.cert_file;
    b_.trusted_ca_file = a_.cert_file;
  }

  // The listener presents `listener_files`' certificate and wants one trusted by its CA; the
  // dialer presents its own and expects `host`.
  static Outcome Connect(TlsFiles listener_files, const TlsFiles& dialer_files,
                         const std::string& host = "127.0.0.1") {
    listener_files.client_cert_auth = true;
    auto listener_context = MakeServerTlsContext(listener_files, "peer");
    auto dialer_context = MakeDialerTlsContext(dialer_files);
    if (!listener_context.ok() || !dialer_context.ok()) return {"bad files", "bad files"};
    asio::io_context io;
    Local::socket listener_socket(io), dialer_socket(io);
    asio::local::connect_pair(listener_socket, dialer_socket);
    asio::ssl::stream<Local::socket&> listener(listener_socket, **listener_context);
    asio::ssl::stream<Local::socket&> dialer(dialer_socket, **dialer_context);
    if (!ExpectServerName(dialer.native_handle(), dialer_files, host).ok()) return {"", "bad host"};
    Outcome outcome;
    std::string listener_refusal, dialer_refusal;
    KeepRefusalIn(listener.native_handle(), &listener_refusal);
    KeepRefusalIn(dialer.native_handle(), &dialer_refusal);
    char listener_byte = 'l', dialer_byte = 'd';
    auto run = [](asio::ssl::stream<Local::socket&>& stream,
                  asio::ssl::stream_base::handshake_type type, std::string& refusal,
                  std::string& seen, char& byte) {
      stream.async_handshake(type, [&](boost::system::error_code ec) {
        if (ec) {
          seen = HandshakeFailureText(stream.native_handle(), ec, refusal);
          stream.next_layer().close(ec);
          return;
        }
        asio::async_write(stream, asio::buffer(&byte, 1), [](boost::system::error_code, size_t) {});
        asio::async_read(stream, asio::buffer(&byte, 1), [&](boost::system::error_code ec, size_t) {
          seen = ec ? HandshakeFailureText(stream.native_handle(), ec, refusal) : "ok";
          stream.next_layer().close(ec);
        });
      });
    };
    run(listener, asio::ssl::stream_base::server, listener_refusal, outcome.listener,
        listener_byte);
    run(dialer, asio::ssl::stream_base::client, dialer_refusal, outcome.dialer, dialer_byte);
    io.run();
    return outcome;
  }

  testing::TempDir dir_;
  TlsFiles a_, b_;
};

TEST_F(TlsContextTest, TrustedCertificatesConnect) {
  Outcome outcome = Connect(a_, a_);
  EXPECT_EQ(outcome.listener, "ok");
  EXPECT_EQ(outcome.dialer, "ok");
}

TEST_F(TlsContextTest, AListenerRefusingByEtcdsRulesSendsAnAlertTheDialerReadsAsGoWould) {
  TlsFiles listener = a_;
  listener.allowed_cn = "peer";  // the certificate names none
  Outcome outcome = Connect(listener, a_);
  EXPECT_EQ(outcome.listener, "client certificate authentication failed");
  EXPECT_EQ(outcome.dialer, "remote error: tls: bad certificate");
}

TEST_F(TlsContextTest, ADialerRefusingTheServersCertificateByTheRulesSendsAnAlert) {
  TlsFiles dialer = a_;
  dialer.allowed_hostname = "peer.example";
  Outcome outcome = Connect(a_, dialer);
  EXPECT_EQ(outcome.dialer, "client certificate authentication failed");
  EXPECT_EQ(outcome.listener, "remote error: tls: bad certificate");
}

TEST_F(TlsContextTest, AnUntrustedCertificateIsRefusedWithGosWordsAndAlert) {
  TlsFiles dialer = a_;
  dialer.trusted_ca_file = b_.cert_file;  // does not vouch for the listener's
  Outcome outcome = Connect(a_, dialer);
  EXPECT_EQ(outcome.dialer, "x509: certificate signed by unknown authority");
  EXPECT_EQ(outcome.listener, "remote error: tls: bad certificate");

  Outcome listener_side = Connect(a_, b_);  // the listener does not trust b's certificate
  EXPECT_EQ(listener_side.listener,
            "tls: failed to verify client certificate: x509: certificate signed by unknown "
            "authority");
  EXPECT_EQ(listener_side.dialer, "remote error: tls: bad certificate");
}

TEST_F(TlsContextTest, TheDialerChecksTheHostItDialled) {
  Outcome outcome = Connect(a_, a_, "127.0.0.2");
  EXPECT_EQ(outcome.dialer, "x509: certificate is valid for 127.0.0.1, not 127.0.0.2");
  EXPECT_EQ(outcome.listener, "remote error: tls: bad certificate");
  EXPECT_EQ(Connect(a_, a_, "peer.example").dialer,
            "x509: certificate is not valid for any names, but wanted to match peer.example");
}

TEST_F(TlsContextTest, SelfSignedDialersTrustAnyCertificate) {
  TlsFiles dialer = b_;
  dialer.self_signed = true;  // --peer-auto-tls
  TlsFiles listener = a_;
  listener.trusted_ca_file = b_.cert_file;
  Outcome outcome = Connect(listener, dialer, "127.0.0.9");
  EXPECT_EQ(outcome.listener, "ok");
  EXPECT_EQ(outcome.dialer, "ok");
}

TEST_F(TlsContextTest, PlaintextAndSilenceAreNamedAsGoNamesThem) {
  auto context = MakeServerTlsContext(a_, "peer");
  ASSERT_TRUE(context.ok());
  for (const std::string& sent :
       {std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), std::string()}) {
    asio::io_context io;
    Local::socket listener_socket(io), other(io);
    asio::local::connect_pair(listener_socket, other);
    asio::ssl::stream<Local::socket&> listener(listener_socket, **context);
    std::string seen;
    listener.async_handshake(asio::ssl::stream_base::server, [&](boost::system::error_code ec) {
      seen = ec ? HandshakeFailureText(listener.native_handle(), ec, "") : "ok";
    });
    asio::write(other, asio::buffer(sent));
    other.shutdown(asio::socket_base::shutdown_send);
    io.run();
    EXPECT_EQ(seen, sent.empty() ? "EOF" : "tls: first record does not look like a TLS handshake");
  }
}

}  // namespace
}  // namespace leasehold::server
