// A small HTTP/1.1 server (the Azure Blob adapter, metrics and health), on Boost.Beast: keep-alive, many concurrent
// connections served by a few threads, bounded header and body sizes (oversized requests are
// answered 413 and the connection closed). Requests are handed to a handler that may answer later,
// from any thread; answers on one connection go out in request order (one request at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "boost/beast/http/message.hpp"
#include "boost/beast/http/string_body.hpp"

namespace leasehold::server {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

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
  };
  // Calls `respond` exactly once, from any thread.
  using Respond = std::function<void(HttpResponse)>;
  using Handler = std::function<void(HttpRequest&&, Respond)>;

  HttpServer(Options options, Handler handler);
  ~HttpServer();

  // Binds and starts serving; InvalidArgument/Unavailable when the address cannot be bound.
  absl::Status Start();
  // Stops accepting, closes connections and joins the threads.
  void Stop();
  // The bound port (useful with port 0).
  uint16_t port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::server
