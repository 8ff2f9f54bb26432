// DelayProxy in this process's own namespace, in front of an echo server: bytes pass unchanged and
// in order, a delay holds each direction at least that long, and a relay to nothing closes.
#include "tests/faults/delay_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace leasehold::faults {
namespace {

// Listens on a free loopback port and echoes every connection until its peer closes.
class EchoServer {
 public:
  EchoServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(listen(fd_, 8), 0);
    socklen_t length = sizeof address;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int client = accept(fd_, nullptr, nullptr);
        if (client < 0) return;
        char buffer[4096];
        for (ssize_t n; (n = recv(client, buffer, sizeof buffer, 0)) > 0;)
          send(client, buffer, n, 0);
        close(client);
      }
    });
  }
  ~EchoServer() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  return fd;
}

std::string ReadExactly(int fd, size_t size) {
  std::string out;
  char buffer[4096];
  while (out.size() < size) {
    const ssize_t n = recv(fd, buffer, std::min(sizeof buffer, size - out.size()), 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

std::unique_ptr<DelayProxy> StartProxy(int target_port, std::shared_ptr<PeerDelay> delay) {
  auto proxy = DelayProxy::Start("", "127.0.0.1", 0, target_port, std::move(delay), 1);
  EXPECT_TRUE(proxy.ok()) << proxy.status();
  return proxy.ok() ? *std::move(proxy) : nullptr;
}

TEST(DelayProxyTest, RelaysBytesInOrderWithoutDelay) {
  EchoServer echo;
  auto delay = std::make_shared<PeerDelay>();
  auto proxy = StartProxy(echo.port(), delay);
  ASSERT_NE(proxy, nullptr);
  const int fd = Connect(proxy->port());
  std::string sent;
  for (int i = 0; i < 200; ++i) sent += "message " + std::to_string(i) + ";";
  ASSERT_EQ(send(fd, sent.data(), sent.size(), 0), static_cast<ssize_t>(sent.size()));
  EXPECT_EQ(ReadExactly(fd, sent.size()), sent);
  close(fd);
}

// Each direction is held at least mean - jitter; only a lower bound is checked, which a loaded
// machine cannot break. Many small writes under jitter still arrive in order.
TEST(DelayProxyTest, HoldsEachDirectionAndKeepsOrderUnderJitter) {
  EchoServer echo;
  auto delay = std::make_shared<PeerDelay>();
  delay->mean_ms = 100;
  delay->jitter_ms = 50;
  auto proxy = StartProxy(echo.port(), delay);
  ASSERT_NE(proxy, nullptr);
  const int fd = Connect(proxy->port());
  const auto start = std::chrono::steady_clock::now();
  std::string sent;
  for (int i = 0; i < 30; ++i) {
    const std::string part = "m" + std::to_string(i) + ";";
    ASSERT_EQ(send(fd, part.data(), part.size(), 0), static_cast<ssize_t>(part.size()));
    sent += part;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(ReadExactly(fd, sent.size()), sent);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  close(fd);
}

TEST(DelayProxyTest, AConnectionToAMemberThatIsDownIsClosed) {
  int free_port = 0;
  {
    EchoServer gone;  // a port that was just free, and is again
    free_port = gone.port();
  }
  auto delay = std::make_shared<PeerDelay>();
  auto proxy = StartProxy(free_port, delay);
  ASSERT_NE(proxy, nullptr);
  const int fd = Connect(proxy->port());
  char byte;
  EXPECT_LE(recv(fd, &byte, 1, 0), 0);
  close(fd);
}

}  // namespace
}  // namespace leasehold::faults
