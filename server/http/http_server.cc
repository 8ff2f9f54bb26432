#include "server/http/http_server.h"

#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "boost/asio/bind_executor.hpp"
#include "boost/asio/dispatch.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/tcp_stream.hpp"
#include "boost/beast/http/chunk_encode.hpp"
#include "boost/beast/http/empty_body.hpp"
#include "boost/beast/http/error.hpp"
#include "boost/beast/http/parser.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/serializer.hpp"
#include "boost/beast/http/write.hpp"
#include "boost/beast/ssl/ssl_stream.hpp"
#include "server/http/port_sharing.h"
#include "server/tls/tls_context.h"

namespace leasehold::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// An idle keep-alive connection is closed after this long; so is one whose peer stops reading.
constexpr auto kIdleTimeout = std::chrono::seconds(120);
// A TLS client has this long to finish its handshake.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
// After refusing an oversized body: how much more of it is read and dropped, and for how long.
constexpr uint64_t kMaxDrainBytes = 64 * 1024 * 1024;
constexpr auto kDrainTimeout = std::chrono::seconds(10);

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection, plain (beast::tcp_stream) or over TLS (TlsStream).
template <typename Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, const HttpServer::Options& options, const HttpServer::Handler& handler)
      : stream_(std::move(stream)), options_(options), handler_(handler) {}

  void Start() {
    asio::dispatch(stream_.get_executor(),
                   [self = this->shared_from_this()] { self->Handshake(); });
  }

 private:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void Handshake() {
    if constexpr (kTls) {
      lowest().expires_after(kHandshakeTimeout);
      stream_.async_handshake(
          asio::ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
            if (ec) return self->Close();  // not TLS, an untrusted certificate, or too slow
            self->Read();
          });
    } else {
      Read();
    }
  }

  void Read() {
    parser_.emplace();
    parser_->header_limit(options_.header_limit_bytes);
    parser_->body_limit(options_.body_limit_bytes);
    lowest().expires_after(kIdleTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::body_limit && options_.too_large) {
      HttpResponse response = options_.too_large(parser_->get());
      response.keep_alive(false);
      // The client is likely still sending the body: closing at once would reset the connection
      // before it reads the answer, so the rest is read and dropped after the answer goes out.
      drain_before_close_ = true;
      Write(std::move(response));
      return;
    }
    if (ec) {
      // Malformed requests included: a parser error leaves the stream unusable, so close it.
      if (ec == http::error::header_limit || ec == http::error::bad_target ||
          ec == http::error::bad_method || ec == http::error::bad_version ||
          ec == http::error::bad_field || ec == http::error::bad_value) {
        HttpResponse response{http::status::bad_request, 11};
        response.keep_alive(false);
        response.prepare_payload();
        Write(std::move(response));
        return;
      }
      Close();
      return;
    }
    HttpRequest request = parser_->release();
    const bool keep_alive = request.keep_alive();
    const unsigned version = request.version();
    auto whole = [self = this->shared_from_this(), keep_alive, version](HttpResponse response) {
      response.version(version);
      response.keep_alive(keep_alive && response.keep_alive());
      asio::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->Write(std::move(response));
      });
    };
    auto streamer =
        [self = this->shared_from_this()](HttpResponse header) -> std::shared_ptr<HttpStream> {
      auto stream = std::make_shared<ChunkedStream>(self);
      asio::post(self->stream_.get_executor(), [stream, header = std::move(header)]() mutable {
        stream->Begin(std::move(header));
      });
      return stream;
    };
    handler_(std::move(request), HttpServer::Respond(std::move(whole), std::move(streamer)));
  }

  // A chunked answer on this connection. Its state is guarded by `mu_`; socket work runs on the
  // session's strand.
  class ChunkedStream : public HttpStream, public std::enable_shared_from_this<ChunkedStream> {
   public:
    explicit ChunkedStream(std::shared_ptr<Session> session) : session_(std::move(session)) {}

    bool Send(std::string piece) override {
      if (piece.empty()) return true;  // an empty chunk would end the answer
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_ || ending_) return false;
      queue_.push_back(std::move(piece));
      Kick();
      return true;
    }
    void End() override {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_ || ending_) return;
      ending_ = true;
      Kick();
    }
    void OnClosed(std::function<void()> closed) override {
      std::unique_lock<std::mutex> lock(mu_);
      if (ended_) {
        lock.unlock();
        closed();
        return;
      }
      closed_ = std::move(closed);
    }

    // On the strand: writes the header, then watches for the client going away.
    void Begin(HttpResponse header) {
      auto& s = *session_;
      header_.result(header.result());
      for (const auto& field : header) header_.set(field.name_string(), field.value());
      header_.version(11);
      header_.chunked(true);
      header_.keep_alive(false);
      serializer_.emplace(header_);
      s.lowest().expires_never();
      http::async_write_header(s.stream_, *serializer_,
                               [self = this->shared_from_this()](beast::error_code ec, size_t) {
                                 if (ec) return self->Ended();
                                 {
                                   std::lock_guard<std::mutex> lock(self->mu_);
                                   self->started_ = true;
                                   self->Kick();
                                 }
                                 self->WatchForHangUp();
                               });
    }

   private:
    // Schedules the next write if none is in flight. Called with mu_ held.
    void Kick() {
      if (!started_ || writing_ || ended_) return;
      if (queue_.empty() && !ending_) return;
      writing_ = true;
      asio::post(session_->stream_.get_executor(),
                 [self = this->shared_from_this()] { self->WriteNext(); });
    }

    void WriteNext() {
      std::string piece;
      bool last = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!queue_.empty()) {
          piece = std::move(queue_.front());
          queue_.pop_front();
        } else {
          last = ending_;
        }
      }
      auto done = [self = this->shared_from_this(), last](beast::error_code ec, size_t) {
        if (ec || last) return self->Ended();
        std::lock_guard<std::mutex> lock(self->mu_);
        self->writing_ = false;
        self->Kick();
      };
      if (last) {
        asio::async_write(session_->stream_, http::make_chunk_last(), std::move(done));
      } else {
        writing_piece_ = std::move(piece);
        asio::async_write(session_->stream_, http::make_chunk(asio::buffer(writing_piece_)),
                          std::move(done));
      }
    }

    // A streaming client sends nothing more: a completed read means it has hung up (or misbehaves).
    void WatchForHangUp() {
      session_->stream_.async_read_some(
          asio::buffer(hang_up_buffer_),
          [self = this->shared_from_this()](beast::error_code, size_t) { self->Ended(); });
    }

    void Ended() {
      std::function<void()> closed;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (ended_) return;
        ended_ = true;
        queue_.clear();
        closed = std::move(closed_);
      }
      session_->Close();
      if (closed) closed();
    }

    std::shared_ptr<Session> session_;
    http::response<http::empty_body> header_;
    std::optional<http::response_serializer<http::empty_body>> serializer_;
    std::string writing_piece_;
    std::array<char, 1024> hang_up_buffer_;
    std::mutex mu_;
    std::deque<std::string> queue_;
    std::function<void()> closed_;
    bool started_ = false;
    bool writing_ = false;
    bool ending_ = false;
    bool ended_ = false;
  };

  void Write(HttpResponse response) {
    response_ = std::move(response);
    // A HEAD answer states the entity's length without carrying it; everything else is measured.
    if (response_.find(http::field::content_length) == response_.end() ||
        !response_.body().empty()) {
      response_.prepare_payload();
    }
    lowest().expires_after(kIdleTimeout);
    http::async_write(stream_, response_,
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        if (ec || !self->response_.keep_alive()) {
                          if (!ec && self->drain_before_close_) return self->Drain();
                          self->Close();
                          return;
                        }
                        self->Read();
                      });
  }

  // Half-closes, then reads and drops what the client still sends (at most kMaxDrainBytes, for at
  // most kDrainTimeout) before closing.
  void Drain() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().expires_after(kDrainTimeout);
    DrainSome();
  }
  void DrainSome() {
    stream_.async_read_some(asio::buffer(drain_buffer_),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              self->drained_ += n;
                              if (ec || self->drained_ > kMaxDrainBytes) {
                                self->lowest().close();
                                return;
                              }
                              self->DrainSome();
                            });
  }

  // Closes the connection (over TLS without a close_notify: every answer was complete already).
  void Close() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().close();
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpResponse response_;
  bool drain_before_close_ = false;
  uint64_t drained_ = 0;
  std::array<char, 16 * 1024> drain_buffer_;
  const HttpServer::Options& options_;
  const HttpServer::Handler& handler_;
};

}  // namespace

HttpResponse MakeHttpResponse(http::status status, std::string_view content_type,
                              std::string body) {
  HttpResponse response{status, 11};
  response.set(http::field::content_type,
               beast::string_view(content_type.data(), content_type.size()));
  response.body() = std::move(body);
  return response;
}

struct HttpServer::Impl {
  Impl(Options o, Handler h)
      : options(std::move(o)), handler(std::move(h)), acceptor(asio::make_strand(io)) {}

  void Accept() {
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        if (shared_port) {
          RouteSharedConnection(std::move(socket), tls_context != nullptr, routes);
        } else {
          Serve(std::move(socket));
        }
      }
      Accept();
    });
  }

  // Serves `socket` as HTTP/1.1, over TLS when the port is https://.
  void Serve(tcp::socket socket) {
    if (tls_context) {
      std::make_shared<Session<TlsStream>>(TlsStream(std::move(socket), *tls_context), options,
                                           handler)
          ->Start();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)), options,
                                                   handler)
          ->Start();
    }
  }

  Options options;
  Handler handler;
  std::unique_ptr<asio::ssl::context> tls_context;  // set by Start when options.tls is
  // Whether gRPC shares the port (options.divert_http2, or options.relay_grpc_tls_to with TLS),
  // and where its connections go.
  bool shared_port = false;
  SharedPortRoutes routes;
  asio::io_context io;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
  std::atomic<uint16_t> port{0};
};

HttpServer::HttpServer(Options options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { Stop(); }

absl::Status HttpServer::Start() {
  if (impl_->options.tls) {
    auto context = MakeServerTlsContext(*impl_->options.tls, "client");
    if (!context.ok()) return context.status();
    impl_->tls_context = std::move(*context);
  }
  beast::error_code ec;
  auto address = asio::ip::make_address(impl_->options.host, ec);
  if (ec) return absl::InvalidArgumentError("HTTP listener: bad address " + impl_->options.host);
  tcp::endpoint endpoint(address, impl_->options.port);
  Impl& impl = *impl_;
  impl.shared_port = impl.tls_context ? !impl.options.relay_grpc_tls_to.empty()
                                      : static_cast<bool>(impl.options.divert_http2);
  impl.routes = SharedPortRoutes{impl.options.divert_http2, impl.options.relay_grpc_tls_to,
                                 [&impl](tcp::socket socket) { impl.Serve(std::move(socket)); }};
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError("cannot listen on " + impl_->options.host + ":" +
                                  std::to_string(impl_->options.port) + ": " + ec.message());
  }
  impl_->port = acceptor.local_endpoint().port();
  impl_->Accept();
  for (int i = 0; i < std::max(1, impl_->options.threads); ++i) {
    impl_->threads.emplace_back([this] { impl_->io.run(); });
  }
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (!impl_ || impl_->threads.empty()) return;
  asio::post(impl_->acceptor.get_executor(), [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
  impl_->io.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

uint16_t HttpServer::port() const { return impl_->port; }

}  // namespace leasehold::server
