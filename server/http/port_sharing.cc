#include "server/http/port_sharing.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string_view>
#include <vector>

#include "boost/asio/local/stream_protocol.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/core/error.hpp"
#include "server/tls/stream_splice.h"
#include "server/tls/tls_client_hello.h"

namespace leasehold::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// How long a new connection may stay silent before it is closed: a TLS client has this long to
// send its hello (as to finish a handshake), a plain one as long as an idle keep-alive connection.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
constexpr auto kIdleTimeout = std::chrono::seconds(120);

// Relays a client's connection, unread, to gRPC's TLS listener: the TLS session is the client's
// with gRPC, so gRPC sees its certificate. The listener is on an abstract Unix socket (cheaper than
// loopback TCP for every byte), reached on the accepted connection's strand.
void RelayToGrpcTls(tcp::socket client, const std::string& abstract_name) {
  auto upstream = std::make_shared<asio::local::stream_protocol::socket>(client.get_executor());
  auto endpoint = asio::local::stream_protocol::endpoint(std::string(1, '\0') + abstract_name);
  upstream->async_connect(
      endpoint, [upstream, client = std::move(client)](beast::error_code ec) mutable {
        if (!ec) SpliceStreams(std::move(client), std::move(*upstream));  // else both close
      });
}

// Reads a new connection's first bytes without consuming them, to tell where it goes. On a plain
// port shared with gRPC: HTTP/2's preface (a gRPC client, handed over) from HTTP/1 (served here).
// On an https:// port shared with gRPC: a ClientHello offering HTTP/2 alone (a gRPC client,
// relayed) from the rest (served here over TLS).
class Sniffer : public std::enable_shared_from_this<Sniffer> {
 public:
  Sniffer(tcp::socket socket, bool tls, const SharedPortRoutes& routes)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        retry_(socket_.get_executor()),
        tls_(tls),
        bytes_(tls ? kMaxClientHelloBytes + 256 : kPreface.size()),
        routes_(routes) {}

  void Start() {
    timer_.expires_after(tls_ ? kHandshakeTimeout : kIdleTimeout);
    timer_.async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (!ec) self->socket_.close(ec);  // silent for too long: the pending peek fails and ends it
    });
    Peek();
  }

 private:
  static constexpr std::string_view kPreface = "PRI";

  void Peek() {
    socket_.async_receive(
        asio::buffer(bytes_), tcp::socket::message_peek,
        [self = this->shared_from_this()](beast::error_code ec, size_t n) { self->OnPeek(ec, n); });
  }

  void OnPeek(beast::error_code ec, size_t n) {
    if (ec || n == 0) {
      timer_.cancel();
      return;  // closed before saying anything (or timed out): the socket closes with us
    }
    const std::string_view seen(bytes_.data(), n);
    if (!CanTell(seen)) {
      // The rest is on its way ("P" may start "PRI" or "POST"; a hello may come in pieces): look
      // again in a moment, a little later each time, so a client that stops halfway costs little
      // until the timeout.
      retry_.expires_after(retry_delay_);
      retry_delay_ = std::min(retry_delay_ * 2, std::chrono::milliseconds(64));
      retry_.async_wait([self = this->shared_from_this()](beast::error_code) { self->Peek(); });
      return;
    }
    timer_.cancel();
    if (!tls_) {
      if (seen.starts_with(kPreface)) return routes_.divert_http2(socket_.release());
      return routes_.serve(std::move(socket_));
    }
    if (hello_.verdict == ClientHelloAlpn::Verdict::kRead && OffersHttp2Only(hello_.protocols)) {
      RelayToGrpcTls(std::move(socket_), routes_.relay_grpc_tls_to);
      return;
    }
    // Anything else, plaintext included, meets the TLS handshake there (and fails it, as on
    // etcd's).
    routes_.serve(std::move(socket_));
  }

  // Whether `seen` is enough to tell where the connection goes (on an https:// port, the hello read
  // from it is kept in hello_).
  bool CanTell(std::string_view seen) {
    if (!tls_) return seen.size() >= kPreface.size() || !kPreface.starts_with(seen);
    hello_ = ReadClientHelloAlpn(seen);
    return hello_.verdict != ClientHelloAlpn::Verdict::kNeedMore;
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  asio::steady_timer retry_;
  std::chrono::milliseconds retry_delay_{1};
  const bool tls_;
  std::vector<char> bytes_;
  ClientHelloAlpn hello_;
  const SharedPortRoutes& routes_;
};

}  // namespace

void RouteSharedConnection(tcp::socket socket, bool tls, const SharedPortRoutes& routes) {
  std::make_shared<Sniffer>(std::move(socket), tls, routes)->Start();
}

}  // namespace leasehold::server
