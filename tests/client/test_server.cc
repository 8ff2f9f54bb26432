#include "test_server.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "etcdserverpb/rpc.grpc.pb.h"

namespace leasehold::testing {

int TestServer::FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TestServer::TestServer(std::vector<std::string> extra_flags) {
  char tmpl[] = "/tmp/leasehold-client-test-XXXXXX";
  dir_ = mkdtemp(tmpl);
  endpoint_ = "127.0.0.1:" + std::to_string(FreePort());
  const std::string peer = "http://127.0.0.1:" + std::to_string(FreePort());
  flags_ = {"--data-dir=" + dir_ + "/data", "--listen-client-urls=http://" + endpoint_,
            "--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
            "--log-level=warn"};
  flags_.insert(flags_.end(), extra_flags.begin(), extra_flags.end());
  Start();
}

TestServer::TestServer(const std::string& name, int client_port, int peer_port,
                       const std::string& initial_cluster) {
  char tmpl[] = "/tmp/leasehold-client-test-XXXXXX";
  dir_ = mkdtemp(tmpl);
  endpoint_ = "127.0.0.1:" + std::to_string(client_port);
  const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port);
  flags_ = {"--name=" + name,
            "--data-dir=" + dir_ + "/data",
            "--listen-client-urls=http://" + endpoint_,
            "--listen-peer-urls=" + peer,
            "--initial-advertise-peer-urls=" + peer,
            "--initial-cluster=" + initial_cluster,
            "--initial-cluster-token=client-test",
            "--log-level=warn"};
}

std::vector<std::unique_ptr<TestServer>> TestServer::StartCluster(int n) {
  std::vector<int> client_ports, peer_ports;
  std::string initial;
  for (int i = 0; i < n; ++i) {
    client_ports.push_back(FreePort());
    peer_ports.push_back(FreePort());
    initial += (i ? "," : "") + std::string("m") + std::to_string(i) +
               "=http://127.0.0.1:" + std::to_string(peer_ports[i]);
  }
  std::vector<std::unique_ptr<TestServer>> members;
  for (int i = 0; i < n; ++i) {
    members.push_back(std::unique_ptr<TestServer>(
        new TestServer("m" + std::to_string(i), client_ports[i], peer_ports[i], initial)));
    members.back()->Spawn();
  }
  for (auto& m : members) m->WaitServing();
  return members;
}

TestServer::~TestServer() {
  if (pid_ > 0) Kill();
  std::filesystem::remove_all(dir_);
}

void TestServer::Start() {
  Spawn();
  WaitServing();
}

void TestServer::Spawn() {
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a test that crashed or timed out
    std::vector<char*> argv;
    std::string binary = LEASEHOLD_BINARY;
    argv.push_back(binary.data());
    for (auto& f : flags_) argv.push_back(f.data());
    argv.push_back(nullptr);
    const std::string log = dir_ + "/server.log";
    freopen(log.c_str(), "a", stderr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
}

void TestServer::WaitServing() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 50);
  auto stub = etcdserverpb::KV::NewStub(
      grpc::CreateCustomChannel(endpoint_, grpc::InsecureChannelCredentials(), args));
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    etcdserverpb::RangeRequest request;
    request.set_key("ready?");
    etcdserverpb::RangeResponse response;
    context.set_wait_for_ready(
        true);  // wait for the listener rather than fail on a refused connection
    if (stub->Range(&context, request, &response).ok()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("leasehold did not start; see " + dir_ + "/server.log");
}

void TestServer::Kill() {
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

int TestServer::Stop(int timeout_ms) {
  kill(pid_, SIGTERM);
  int status = 0;
  pid_t reaped = 0;
  for (int waited = 0; (reaped = waitpid(pid_, &status, WNOHANG)) == 0 && waited < timeout_ms;
       waited += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (reaped == 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void TestServer::Pause() { kill(pid_, SIGSTOP); }
void TestServer::Resume() { kill(pid_, SIGCONT); }

}  // namespace leasehold::testing
