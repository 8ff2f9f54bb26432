#include "server/peer/peer_dialer.h"

#include <unistd.h>

#include <chrono>
#include <map>
#include <random>
#include <thread>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/local/stream_protocol.hpp"
#include "boost/asio/ssl/stream.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "common/url.h"
#include "server/observability/log.h"
#include "server/peer/peer_endpoint.h"
#include "server/tls/stream_splice.h"
#include "server/tls/tls.h"
#include "server/tls/tls_context.h"

namespace leasehold::server {
namespace {

namespace asio = boost::asio;
using Local = asio::local::stream_protocol;
using Socket = asio::generic::stream_protocol::socket;
// gRPC's plaintext connection, and the TLS connection to the peer it is relayed over.
using Splice = StreamSplice<Local::socket, asio::ssl::stream<Socket>>;

// A connection to a peer has this long to be made and to finish its handshake.
constexpr auto kConnectTimeout = std::chrono::seconds(10);

// One peer URL's local socket, where every connection gRPC makes is carried over TLS to the peer.
class Tunnel {
 public:
  Tunnel(asio::io_context& io, std::string url, TlsFiles files,
         std::unique_ptr<asio::ssl::context> context, std::string name)
      : io_(io),
        url_(std::move(url)),
        files_(std::move(files)),
        context_(std::move(context)),
        name_(std::move(name)),
        acceptor_(io) {}

  absl::Status Start() {
    boost::system::error_code ec;
    const Local::endpoint local(std::string(1, '\0') + name_);
    acceptor_.open(local.protocol(), ec);
    if (!ec) acceptor_.bind(local, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      return absl::UnavailableError("cannot open a local socket for " + url_ + ": " + ec.message());
    Accept();
    return absl::OkStatus();
  }

  std::string Target() const { return "unix-abstract:" + name_; }

 private:
  // One connection from gRPC, until it is spliced to its TLS twin or given up.
  class Connection : public std::enable_shared_from_this<Connection> {
   public:
    Connection(Tunnel& tunnel, Local::socket local)
        : tunnel_(tunnel), timer_(local.get_executor()) {
      auto executor = local.get_executor();
      splice_ = std::make_shared<Splice>(std::piecewise_construct,
                                         std::forward_as_tuple(std::move(local)),
                                         std::forward_as_tuple(Socket(executor), *tunnel.context_));
    }

    void Start() {
      timer_.expires_after(kConnectTimeout);
      timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->tls().next_layer().close(ec);  // too slow: what is pending fails
      });
      // Resolved for each connection (on this thread), so a host name's new address is followed.
      absl::StatusOr<PeerEndpoint> endpoint = PeerEndpointOfUrl(tunnel_.url_);
      if (!endpoint.ok()) return Fail(std::string(endpoint.status().message()));
      tls().next_layer().async_connect(*endpoint,
                                       [self = shared_from_this()](boost::system::error_code ec) {
                                         if (ec) return self->Fail(ec.message());
                                         SendWithoutDelay(self->tls().next_layer());
                                         self->Handshake();
                                       });
    }

   private:
    asio::ssl::stream<Socket>& tls() { return splice_->second(); }

    void Handshake() {
      SSL* ssl = tls().native_handle();
      if (absl::Status st = ExpectServerName(ssl, tunnel_.files_, HostOfPeerUrl(tunnel_.url_));
          !st.ok()) {
        return Fail(std::string(st.message()));
      }
      KeepRefusalIn(ssl, &refusal_);
      tls().async_handshake(asio::ssl::stream_base::client,
                            [self = shared_from_this()](boost::system::error_code ec) {
                              SSL* ssl = self->tls().native_handle();
                              KeepRefusalIn(ssl, nullptr);
                              if (ec) {
                                return self->Fail(HandshakeFailureText(ssl, ec, self->refusal_));
                              }
                              self->timer_.cancel();
                              self->tunnel_.Succeeded();
                              self->splice_->Start();
                            });
    }

    void Fail(const std::string& why) {
      timer_.cancel();
      tunnel_.Failed(why);
      boost::system::error_code ignored;
      tls().next_layer().close(ignored);
      splice_->first().close(ignored);
    }

    Tunnel& tunnel_;
    std::shared_ptr<Splice> splice_;
    asio::steady_timer timer_;
    std::string refusal_;
  };

  void Accept() {
    acceptor_.async_accept(asio::make_strand(io_),
                           [this](boost::system::error_code ec, Local::socket local) {
                             if (!ec)
                               std::make_shared<Connection>(*this, std::move(local))->Start();
                             Accept();
                           });
  }

  void Failed(const std::string& why) {
    absl::MutexLock lock(&mu_);
    if (why == last_failure_) return;
    last_failure_ = why;
    LogWarn("cannot connect to peer", {{"remote-peer-url", url_}, {"error", why}});
  }
  void Succeeded() {
    absl::MutexLock lock(&mu_);
    last_failure_.clear();
  }

  asio::io_context& io_;
  const std::string url_;
  const TlsFiles files_;
  const std::unique_ptr<asio::ssl::context> context_;
  const std::string name_;
  Local::acceptor acceptor_;
  absl::Mutex mu_;
  std::string last_failure_ ABSL_GUARDED_BY(mu_);
};

// This process's tunnels, by URL and files; they live as long as the process, like gRPC's own
// connections' machinery.
class Tunnels {
 public:
  static Tunnels& Get() {
    static Tunnels* tunnels = new Tunnels;  // never destroyed: channels may outlive main's objects
    return *tunnels;
  }

  absl::StatusOr<std::string> TargetFor(const std::string& url, const TlsFiles& files) {
    const std::string key =
        absl::StrCat(url, "\n", files.cert_file, "\n", files.key_file, "\n", files.trusted_ca_file,
                     "\n", files.self_signed, "\n", files.allowed_cn, "\n", files.allowed_hostname,
                     "\n", files.cipher_list);
    absl::MutexLock lock(&mu_);
    if (auto it = tunnels_.find(key); it != tunnels_.end()) return it->second->Target();
    auto context = MakeDialerTlsContext(files);
    if (!context.ok()) return context.status();
    auto tunnel = std::make_unique<Tunnel>(
        io_, url, files, std::move(*context),
        absl::StrCat("leasehold-peer-", getpid(), "-", absl::Hex(prefix_), "-", tunnels_.size()));
    if (absl::Status st = tunnel->Start(); !st.ok()) return st;
    std::string target = tunnel->Target();
    tunnels_.emplace(key, std::move(tunnel));
    return target;
  }

 private:
  Tunnels() : prefix_(std::random_device()()), work_(asio::make_work_guard(io_)) {
    // Two threads: a slow handshake with one peer never holds up the traffic of another.
    for (int i = 0; i < 2; ++i) std::thread([this] { io_.run(); }).detach();
  }

  const uint32_t prefix_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Tunnel>> tunnels_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> DialPeer(const std::string& url,
                                                        const TlsFiles& files,
                                                        const grpc::ChannelArguments& args) {
  absl::StatusOr<std::string> address = GrpcAddressOfUrl(url);
  if (!address.ok()) return address.status();
  if (IsHttpsUrl(url)) {
    absl::StatusOr<std::string> target = Tunnels::Get().TargetFor(url, files);
    if (!target.ok()) return target.status();
    address = *std::move(target);
  }
  return grpc::CreateCustomChannel(*address, grpc::InsecureChannelCredentials(), args);
}

}  // namespace leasehold::server
