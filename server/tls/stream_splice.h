// Joins two connected Asio streams (sockets, or TLS streams over them) so that bytes read from
// either are written to the other: how a connection is relayed to a listener that must not see
// its TLS (or must see it unread). An end of stream on one side is passed on as a half-close where
// the other side is a plain socket; a TLS stream, or any error, closes both. The splice owns both
// streams and lives until both are closed; both must use one strand (their handlers never run
// concurrently). A TLS stream is built in place and its handshake made there (first(), second()),
// before Start: Asio's TLS streams must not move once used.
#pragma once

#include <array>
#include <memory>
#include <tuple>
#include <utility>

#include "boost/asio/write.hpp"
#include "boost/beast/core/stream_traits.hpp"

namespace leasehold::server {

template <typename A, typename B>
class StreamSplice : public std::enable_shared_from_this<StreamSplice<A, B>> {
 public:
  StreamSplice(A a, B b) : a_(std::move(a)), b_(std::move(b)) {}
  // Builds each stream from its constructor's arguments.
  template <typename... ArgsA, typename... ArgsB>
  StreamSplice(std::piecewise_construct_t, std::tuple<ArgsA...> args_a, std::tuple<ArgsB...> args_b)
      : a_(std::make_from_tuple<A>(std::move(args_a))),
        b_(std::make_from_tuple<B>(std::move(args_b))) {}

  A& first() { return a_; }
  B& second() { return b_; }

  // Starts relaying; both streams must be connected (and past their handshakes).
  void Start() {
    Pump(a_, b_, a_to_b_);
    Pump(b_, a_, b_to_a_);
  }

 private:
  // A TLS record's most: one read usually carries whole records.
  using Buffer = std::array<char, 16 * 1024 + 64>;

  template <typename From, typename To>
  void Pump(From& from, To& to, Buffer& buffer) {
    from.async_read_some(boost::asio::buffer(buffer), [self = this->shared_from_this(), &from, &to,
                                                       &buffer](boost::system::error_code ec,
                                                                size_t n) {
      if (ec) {
        // This direction has ended: pass that on, and close once both have (at once on an error).
        if (++self->ended_ == 2 || ec != boost::asio::error::eof || !EndSending(to))
          self->CloseBoth();
        return;
      }
      boost::asio::async_write(to, boost::asio::buffer(buffer.data(), n),
                               [self, &from, &to, &buffer](boost::system::error_code ec, size_t) {
                                 if (ec) return self->CloseBoth();
                                 self->Pump(from, to, buffer);
                               });
    });
  }

  // Half-closes `stream` when it is a plain socket; false for a TLS stream (closed instead).
  template <typename Stream>
  static bool EndSending(Stream& stream) {
    if constexpr (requires { stream.next_layer(); }) {
      return false;
    } else {
      boost::system::error_code ignored;
      stream.shutdown(boost::asio::socket_base::shutdown_send, ignored);
      return true;
    }
  }

  void CloseBoth() {
    boost::system::error_code ignored;
    boost::beast::get_lowest_layer(a_).close(ignored);
    boost::beast::get_lowest_layer(b_).close(ignored);
  }

  A a_;
  B b_;
  int ended_ = 0;
  Buffer a_to_b_;
  Buffer b_to_a_;
};

// Starts splicing `a` and `b` (see StreamSplice).
template <typename A, typename B>
void SpliceStreams(A a, B b) {
  std::make_shared<StreamSplice<A, B>>(std::move(a), std::move(b))->Start();
}

}  // namespace leasehold::server
