#include "server/http_server.h"

#include <array>
#include <atomic>
#include <optional>

#include "boost/asio/bind_executor.hpp"
#include "boost/asio/dispatch.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/strand.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/tcp_stream.hpp"
#include "boost/beast/http/error.hpp"
#include "boost/beast/http/parser.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/write.hpp"

namespace leasehold::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// An idle keep-alive connection is closed after this long; so is one whose peer stops reading.
constexpr auto kIdleTimeout = std::chrono::seconds(120);
// After refusing an oversized body: how much more of it is read and dropped, and for how long.
constexpr uint64_t kMaxDrainBytes = 64 * 1024 * 1024;
constexpr auto kDrainTimeout = std::chrono::seconds(10);

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServer::Options& options, const HttpServer::Handler& handler)
      : stream_(std::move(socket)), options_(options), handler_(handler) {}

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(options_.header_limit_bytes);
    parser_->body_limit(options_.body_limit_bytes);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
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
      if (ec == http::error::header_limit || ec == http::error::bad_target || ec == http::error::bad_method ||
          ec == http::error::bad_version || ec == http::error::bad_field || ec == http::error::bad_value) {
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
    handler_(std::move(request), [self = shared_from_this(), keep_alive, version](HttpResponse response) {
      response.version(version);
      response.keep_alive(keep_alive && response.keep_alive());
      asio::post(self->stream_.get_executor(),
                 [self, response = std::move(response)]() mutable { self->Write(std::move(response)); });
    });
  }

  void Write(HttpResponse response) {
    response_ = std::move(response);
    // A HEAD answer states the entity's length without carrying it; everything else is measured.
    if (response_.find(http::field::content_length) == response_.end() || !response_.body().empty()) {
      response_.prepare_payload();
    }
    stream_.expires_after(kIdleTimeout);
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code ec, size_t) {
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
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kDrainTimeout);
    DrainSome();
  }
  void DrainSome() {
    stream_.async_read_some(asio::buffer(drain_buffer_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > kMaxDrainBytes) {
        self->stream_.close();
        return;
      }
      self->DrainSome();
    });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
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

struct HttpServer::Impl {
  Impl(Options o, Handler h) : options(std::move(o)), handler(std::move(h)), acceptor(asio::make_strand(io)) {}

  void Accept() {
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        std::make_shared<Session>(std::move(socket), options, handler)->Start();
      }
      Accept();
    });
  }

  Options options;
  Handler handler;
  asio::io_context io;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
  std::atomic<uint16_t> port{0};
};

HttpServer::HttpServer(Options options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { Stop(); }

absl::Status HttpServer::Start() {
  beast::error_code ec;
  auto address = asio::ip::make_address(impl_->options.host, ec);
  if (ec) return absl::InvalidArgumentError("blob listener: bad address " + impl_->options.host);
  tcp::endpoint endpoint(address, impl_->options.port);
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError("blob listener: cannot listen on " + impl_->options.host + ":" +
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
