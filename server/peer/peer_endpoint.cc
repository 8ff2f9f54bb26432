#include "server/peer/peer_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "absl/strings/str_cat.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/local/stream_protocol.hpp"
#include "common/url.h"

namespace leasehold::server {

namespace asio = boost::asio;

std::string HostOfPeerUrl(const std::string& url) {
  if (IsUnixUrl(url)) return "";
  absl::StatusOr<std::string> host_port = HostPortOfUrl(url);
  if (!host_port.ok()) return "";
  std::string host = host_port->substr(0, host_port->rfind(':'));
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host;
}

absl::StatusOr<PeerEndpoint> PeerEndpointOfUrl(const std::string& url) {
  absl::StatusOr<std::string> address = GrpcAddressOfUrl(url);
  if (!address.ok()) return address.status();
  if (IsUnixUrl(url)) {
    return PeerEndpoint(asio::local::stream_protocol::endpoint(address->substr(5)));  // "unix:"
  }
  std::string host = HostOfPeerUrl(url);
  const std::string port = address->substr(address->rfind(':') + 1);
  if (host == "localhost") host = "127.0.0.1";
  boost::system::error_code ec;
  asio::ip::address ip = asio::ip::make_address(host, ec);
  if (!ec) return PeerEndpoint(asio::ip::tcp::endpoint(ip, static_cast<uint16_t>(std::stoi(port))));
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(host, port, ec);
  if (ec || results.empty()) {
    return absl::InvalidArgumentError("cannot resolve " + host + " in " + url + ": " +
                                      ec.message());
  }
  return PeerEndpoint(results.begin()->endpoint());
}

void SendWithoutDelay(asio::generic::stream_protocol::socket& socket) {
  boost::system::error_code ignored;  // a Unix socket has no such option
  socket.set_option(asio::ip::tcp::no_delay(true), ignored);
}

std::string IpOfEndpoint(const PeerEndpoint& endpoint) {
  const sockaddr* address = endpoint.data();
  char text[INET6_ADDRSTRLEN] = {};
  if (address->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof text);
  } else if (address->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text,
              sizeof text);
  }
  return text;
}

std::string DescribeEndpoint(const PeerEndpoint& endpoint) {
  const sockaddr* address = endpoint.data();
  if (address->sa_family == AF_INET) {
    return absl::StrCat(IpOfEndpoint(endpoint), ":",
                        ntohs(reinterpret_cast<const sockaddr_in*>(address)->sin_port));
  }
  if (address->sa_family == AF_INET6) {
    return absl::StrCat("[", IpOfEndpoint(endpoint),
                        "]:", ntohs(reinterpret_cast<const sockaddr_in6*>(address)->sin6_port));
  }
  if (address->sa_family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(address);
    const size_t length = endpoint.size() - offsetof(sockaddr_un, sun_path);
    return length == 0 ? "@" : std::string(un->sun_path, strnlen(un->sun_path, length));
  }
  return "?";
}

}  // namespace leasehold::server
