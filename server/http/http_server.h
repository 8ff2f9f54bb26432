// A small HTTP/1.1 server (the Azure Blob adapter, metrics and health, the JSON gateway), on
// Boost.Beast: plain or over TLS, keep-alive, many concurrent connections served by a few threads,
// bounded header and body sizes (oversized requests are answered 413 and the connection closed).
// Requests are handed to a handler that may answer later, from any thread; answers on one
// connection go out in request order (one request at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "boost/beast/http/message.hpp"
#include "boost/beast/http/string_body.hpp"
#include "server/tls/tls_files.h"

namespace leasehold::server {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

// A whole answer: `status` with a body of `content_type`.
HttpResponse MakeHttpResponse(boost::beast::http::status status, std::string_view content_type,
                              std::string body);

// An answer sent in pieces (chunked transfer encoding), such as a watch's events: see
// HttpServer::Respond::Stream. Thread-safe.
class HttpStream {
 public:
  virtual ~HttpStream() = default;
  // Queues `piece` to go out as one chunk, in order. False once the stream has ended (the client
  // went away, or End was called): the piece is dropped.
  virtual bool Send(std::string piece) = 0;
  // Ends the answer after what is queued; the connection then closes.
  virtual void End() = 0;
  // Runs `closed` once, on a server thread, when the stream ends for either reason (at once if it
  // already has).
  virtual void OnClosed(std::function<void()> closed) = 0;
};

class HttpServer {
 public:
  struct Options {
    std::string host = "127.0.0.1";
    uint16_t port = 10000;
    int threads = 2;
    uint32_t header_limit_bytes = 64 * 1024;
    uint64_t body_limit_bytes = 1024 * 1024;
    // Answers a request whose body is over the limit (the connection closes after it).
    std::function<HttpResponse(const HttpRequest&)> too_large;
    // When set, a connection that opens with HTTP/2's preface ("PRI * HTTP/2.0", as gRPC clients
    // send) is handed over, as a socket descriptor the callee then owns, instead of being served:
    // how gRPC and HTTP/1.1 share etcd's client port.
    std::function<void(int fd)> divert_http2;
    // When set, connections are served over TLS with these files (as the client port's https://
    // URLs are: a certificate and key, and with client_cert_auth, clients must present a
    // certificate trusted_ca_file signed). Not with divert_http2.
    std::optional<TlsFiles> tls;
    // With `tls`: a connection whose ClientHello offers HTTP/2 and not HTTP/1.1, as gRPC clients'
    // do (see OffersHttp2Only), is relayed byte for byte, still encrypted, to the abstract Unix
    // socket of this name, where gRPC's own TLS listener serves it; the rest are served here. How
    // gRPC and HTTP/1.1 share an https:// client URL, as they share etcd's. Empty: no relay.
    std::string relay_grpc_tls_to;
  };
  // Answers one request exactly once, from any thread: whole (call it), or in pieces (Stream, which
  // sends `header`'s status and fields at once and keeps the connection until the stream ends).
  class Respond {
   public:
    using Whole = std::function<void(HttpResponse)>;
    using Streamer = std::function<std::shared_ptr<HttpStream>(HttpResponse)>;
    Respond(Whole whole, Streamer streamer)
        : whole_(std::move(whole)), streamer_(std::move(streamer)) {}
    void operator()(HttpResponse response) const { whole_(std::move(response)); }
    std::shared_ptr<HttpStream> Stream(HttpResponse header) const {
      return streamer_(std::move(header));
    }

   private:
    Whole whole_;
    Streamer streamer_;
  };
  using Handler = std::function<void(HttpRequest&&, Respond)>;

  HttpServer(Options options, Handler handler);
  ~HttpServer();

  // Binds and starts serving; InvalidArgument for unusable TLS files, Unavailable when the address
  // cannot be bound.
  [[nodiscard]] absl::Status Start();
  // Stops accepting, closes connections and joins the threads.
  void Stop();
  // The bound port (useful with port 0).
  uint16_t port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::server
