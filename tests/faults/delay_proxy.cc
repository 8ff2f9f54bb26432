#include "tests/faults/delay_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace leasehold::faults {
namespace {

using Clock = std::chrono::steady_clock;

// What one direction of a connection holds: chunks read and not yet due or written.
class Pipe {
 public:
  struct Chunk {
    std::string bytes;  // empty: the reading side ended
    Clock::time_point due;
  };
  void Push(Chunk chunk) {
    absl::MutexLock lock(&mu_);
    chunks_.push_back(std::move(chunk));
  }
  Chunk Pop() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](std::deque<Chunk>* chunks) { return !chunks->empty(); }, &chunks_));
    Chunk chunk = std::move(chunks_.front());
    chunks_.pop_front();
    return chunk;
  }

 private:
  absl::Mutex mu_;
  std::deque<Chunk> chunks_ ABSL_GUARDED_BY(mu_);
};

bool WriteAll(int fd, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

// One relayed connection: the client's socket, the member's, and a reader and a writer thread per
// direction. A failure on either side closes both.
struct DelayProxy::Connection {
  int client_fd = -1;
  int upstream_fd = -1;
  Pipe to_member, to_client;
  std::vector<std::thread> threads;
  std::atomic<int> finished{0};
  ~Connection() {
    for (std::thread& t : threads) t.join();
    close(client_fd);
    close(upstream_fd);
  }
  void Break() {
    shutdown(client_fd, SHUT_RDWR);
    shutdown(upstream_fd, SHUT_RDWR);
  }
};

absl::StatusOr<std::unique_ptr<DelayProxy>> DelayProxy::Start(
    const std::string& namespace_path, const std::string& listen_address, int listen_port,
    int target_port, std::shared_ptr<const PeerDelay> delay, uint64_t seed) {
  std::unique_ptr<DelayProxy> proxy(new DelayProxy(target_port, std::move(delay), seed));
  std::promise<absl::Status> ready;
  std::future<absl::Status> listening = ready.get_future();
  proxy->acceptor_ = std::thread(&DelayProxy::Run, proxy.get(), namespace_path, listen_address,
                                 listen_port, &ready);
  if (absl::Status s = listening.get(); !s.ok()) return s;  // the thread has ended then
  return proxy;
}

DelayProxy::DelayProxy(int target_port, std::shared_ptr<const PeerDelay> delay, uint64_t seed)
    : target_port_(target_port), delay_(std::move(delay)), seed_(seed) {}

DelayProxy::~DelayProxy() { Stop(); }

void DelayProxy::Stop() {
  if (stopping_.exchange(true)) return;
  if (const int fd = listen_fd_.load(); fd >= 0) shutdown(fd, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  absl::MutexLock lock(&mu_);
  for (auto& connection : connections_) connection->Break();
  connections_.clear();  // joins
}

void DelayProxy::Run(const std::string& namespace_path, const std::string& listen_address,
                     int listen_port, std::promise<absl::Status>* ready) {
  // setns moves this thread only: every socket it makes from here on is the member's.
  if (!namespace_path.empty()) {
    const int ns = open(namespace_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
      if (ns >= 0) close(ns);
      ready->set_value(absl::UnavailableError("cannot enter " + namespace_path));
      return;
    }
    close(ns);
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(listen_port));
  inet_pton(AF_INET, listen_address.c_str(), &address.sin_addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(fd, 64) != 0) {
    if (fd >= 0) close(fd);
    ready->set_value(absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen_address, ":", listen_port, " for the relay")));
    return;
  }
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  listen_fd_ = fd;
  ready->set_value(absl::OkStatus());
  while (!stopping_) {
    const int client = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (stopping_) break;
      continue;
    }
    Relay(client);
  }
  close(fd);
}

void DelayProxy::Relay(int client_fd) {
  const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in member = {};
  member.sin_family = AF_INET;
  member.sin_port = htons(static_cast<uint16_t>(target_port_));
  member.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (upstream < 0 || connect(upstream, reinterpret_cast<sockaddr*>(&member), sizeof member) != 0) {
    // The member is down: the peer sees a refused connection, as it would without the relay.
    if (upstream >= 0) close(upstream);
    close(client_fd);
    return;
  }
  const int one = 1;
  setsockopt(client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  absl::MutexLock lock(&mu_);
  ReapFinished();
  auto connection = std::make_unique<Connection>();
  Connection* c = connection.get();
  c->client_fd = client_fd;
  c->upstream_fd = upstream;
  const uint64_t seed = seed_ + accepted_++;
  auto reader = [this, c](int from, Pipe* pipe, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Clock::time_point last_due = Clock::now();
    std::string buffer(64 * 1024, '\0');
    for (;;) {
      const ssize_t n = recv(from, buffer.data(), buffer.size(), 0);
      if (n <= 0) break;
      Clock::time_point due = Clock::now();
      if (const int mean = delay_->mean_ms.load(); mean > 0) {
        const int jitter = delay_->jitter_ms.load();
        const int ms = std::max(0, mean - jitter + static_cast<int>(rng() % (2 * jitter + 1)));
        due += std::chrono::milliseconds(ms);
      }
      last_due = std::max(last_due, due);  // a stream keeps its order
      pipe->Push({buffer.substr(0, static_cast<size_t>(n)), last_due});
    }
    pipe->Push({"", Clock::now()});
    c->finished.fetch_add(1);
  };
  auto writer = [c](int to, Pipe* pipe) {
    for (;;) {
      Pipe::Chunk chunk = pipe->Pop();
      if (chunk.bytes.empty()) {
        shutdown(to, SHUT_WR);
        break;
      }
      std::this_thread::sleep_until(chunk.due);
      if (!WriteAll(to, chunk.bytes)) {
        c->Break();
        break;
      }
    }
    c->finished.fetch_add(1);
  };
  c->threads.emplace_back(reader, client_fd, &c->to_member, seed * 2);
  c->threads.emplace_back(writer, upstream, &c->to_member);
  c->threads.emplace_back(reader, upstream, &c->to_client, seed * 2 + 1);
  c->threads.emplace_back(writer, client_fd, &c->to_client);
  connections_.push_back(std::move(connection));
}

void DelayProxy::ReapFinished() {
  connections_.remove_if([](const std::unique_ptr<Connection>& c) { return c->finished == 4; });
}

}  // namespace leasehold::faults
