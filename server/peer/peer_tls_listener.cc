#include "server/peer/peer_tls_listener.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <openssl/ssl.h>

#include "boost/asio/io_context.hpp"
#include "boost/asio/local/stream_protocol.hpp"
#include "boost/asio/ssl/stream.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "server/observability/log.h"
#include "server/peer/peer_endpoint.h"
#include "server/tls/peer_address_check.h"
#include "server/tls/stream_splice.h"
#include "server/tls/tls_context.h"

namespace leasehold::server {
namespace {

namespace asio = boost::asio;
using Socket = asio::generic::stream_protocol::socket;
using Acceptor = asio::basic_socket_acceptor<asio::generic::stream_protocol>;
// The member's TLS connection, and the plaintext socket to gRPC it is relayed to.
using Splice = StreamSplice<asio::ssl::stream<Socket>, asio::local::stream_protocol::socket>;

// A member has this long to finish its handshake.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);

// Chooses HTTP/2 when the client offers it, as gRPC's TLS clients require (the connection's
// plaintext goes to a gRPC server).
int SelectHttp2(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* in,
                unsigned int in_length, void*) {
  static constexpr unsigned char kHttp2[] = {2, 'h', '2'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_length, kHttp2, sizeof kHttp2, in, in_length) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

struct PeerTlsListener::Impl {
  Impl(TlsFiles files, std::function<void(int)> hand_over)
      : files(std::move(files)), hand_over(std::move(hand_over)) {}

  void Accept(Acceptor& acceptor) {
    acceptor.async_accept(asio::make_strand(io),
                          [this, &acceptor](boost::system::error_code ec, Socket socket) {
                            if (ec == asio::error::operation_aborted) return;  // stopping
                            if (!ec) std::make_shared<Handshake>(std::move(socket), *this)->Start();
                            Accept(acceptor);
                          });
  }

  // One accepted connection until it is refused or handed over.
  class Handshake : public std::enable_shared_from_this<Handshake> {
   public:
    Handshake(Socket socket, Impl& impl) : timer_(socket.get_executor()), impl_(impl) {
      auto executor = socket.get_executor();
      splice_ = std::make_shared<Splice>(std::piecewise_construct,
                                         std::forward_as_tuple(std::move(socket), *impl.context),
                                         std::forward_as_tuple(executor));
    }

    void Start() {
      auto& tls = splice_->first();
      boost::system::error_code ec;
      remote_ = tls.next_layer().remote_endpoint(ec);
      SendWithoutDelay(tls.next_layer());
      KeepRefusalIn(tls.native_handle(), &refusal_);
      timer_.expires_after(kHandshakeTimeout);
      timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->splice_->first().next_layer().close(ec);  // too slow: the handshake fails
      });
      tls.async_handshake(
          asio::ssl::stream_base::server,
          [self = shared_from_this()](boost::system::error_code ec) { self->OnHandshake(ec); });
    }

   private:
    void OnHandshake(boost::system::error_code ec) {
      timer_.cancel();
      auto& tls = splice_->first();
      SSL* ssl = tls.native_handle();
      KeepRefusalIn(ssl, nullptr);
      if (ec) return Refuse(HandshakeFailureText(ssl, ec, refusal_));
      // etcd's check after the handshake: the certificate against the address it came from.
      const std::string ip = IpOfEndpoint(remote_);
      if (impl_.check_address && !ip.empty()) {
        if (X509* cert = SSL_get0_peer_certificate(ssl); cert != nullptr) {
          absl::Status st = CheckCertificateAddress(cert, ip);
          if (!st.ok()) return Refuse(std::string(st.message()));
        }
      }
      // Non-blocking, as gRPC's poller requires of the descriptor it takes over.
      int fds[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0) {
        return LogWarn("cannot hand a peer connection over", {{"error", strerror(errno)}});
      }
      splice_->second().assign(asio::local::stream_protocol(), fds[1], ec);
      if (ec) {
        close(fds[0]);
        close(fds[1]);
        return;
      }
      impl_.hand_over(fds[0]);
      splice_->Start();
    }

    void Refuse(const std::string& why) {
      auto& tls = splice_->first();
      const char* server_name = SSL_get_servername(tls.native_handle(), TLSEXT_NAMETYPE_host_name);
      LogWarn("rejected connection", {{"port", "peer"},
                                      {"remote-addr", DescribeEndpoint(remote_)},
                                      {"server-name", server_name != nullptr ? server_name : ""},
                                      {"error", why}});
      boost::system::error_code ignored;
      tls.next_layer().close(ignored);
    }

    std::shared_ptr<Splice> splice_;
    asio::steady_timer timer_;
    Impl& impl_;
    PeerEndpoint remote_;
    std::string refusal_;
  };

  const TlsFiles files;
  const bool check_address = files.client_cert_auth && !files.skip_client_san_verify;
  const std::function<void(int)> hand_over;
  asio::io_context io;
  std::unique_ptr<asio::ssl::context> context;
  std::vector<std::unique_ptr<Acceptor>> acceptors;
  std::vector<std::thread> threads;
};

PeerTlsListener::PeerTlsListener(TlsFiles files, std::function<void(int fd)> hand_over)
    : impl_(std::make_unique<Impl>(std::move(files), std::move(hand_over))) {}

PeerTlsListener::~PeerTlsListener() { Stop(); }

absl::Status PeerTlsListener::Start(const std::vector<std::string>& urls) {
  auto context = MakeServerTlsContext(impl_->files, "peer");
  if (!context.ok()) return context.status();
  impl_->context = std::move(*context);
  SSL_CTX_set_alpn_select_cb(impl_->context->native_handle(), SelectHttp2, nullptr);
  for (const std::string& url : urls) {
    absl::StatusOr<PeerEndpoint> endpoint = PeerEndpointOfUrl(url);
    if (!endpoint.ok()) return endpoint.status();
    if (endpoint->data()->sa_family == AF_UNIX) unlink(DescribeEndpoint(*endpoint).c_str());
    auto acceptor = std::make_unique<Acceptor>(impl_->io);
    boost::system::error_code ec;
    acceptor->open(endpoint->protocol(), ec);
    if (!ec && endpoint->data()->sa_family != AF_UNIX)
      acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(*endpoint, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return absl::UnavailableError("cannot listen on " + url + ": " + ec.message());
    impl_->Accept(*acceptor);
    impl_->acceptors.push_back(std::move(acceptor));
  }
  // Two threads: one member's handshake never holds up the Raft traffic of the others.
  for (int i = 0; i < 2; ++i) impl_->threads.emplace_back([this] { impl_->io.run(); });
  return absl::OkStatus();
}

void PeerTlsListener::Stop() {
  if (impl_->threads.empty()) return;
  asio::post(impl_->io, [this] {
    for (auto& acceptor : impl_->acceptors) {
      boost::system::error_code ignored;
      acceptor->close(ignored);
    }
  });
  impl_->io.stop();
  for (auto& thread : impl_->threads) thread.join();
  impl_->threads.clear();
}

}  // namespace leasehold::server
