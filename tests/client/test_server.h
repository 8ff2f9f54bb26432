// A real leasehold process for client-library tests: own data dir and free ports, started with
// extra flags, killed (or paused) on demand. LEASEHOLD_BINARY is set by CMake.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace leasehold::testing {

class TestServer {
 public:
  // A one-member cluster, started.
  explicit TestServer(std::vector<std::string> extra_flags = {});
  ~TestServer();

  // `n` members of one cluster on loopback, started together; returns once they serve.
  static std::vector<std::unique_ptr<TestServer>> StartCluster(int n);

  // Starts the process (again, on the same ports and data dir) and waits until it serves.
  void Start();
  void Kill();  // SIGKILL, and reaps it
  // SIGTERM, and reaps it: its exit code, or -1 when a signal ended it (a crash, or SIGKILL after
  // `timeout_ms` without exiting).
  int Stop(int timeout_ms);
  void Pause();   // SIGSTOP
  void Resume();  // SIGCONT
  const std::string& endpoint() const { return endpoint_; }

  // A port nothing listens on.
  static int FreePort();

 private:
  TestServer(const std::string& name, int client_port, int peer_port,
             const std::string& initial_cluster);
  void Spawn();
  void WaitServing();

  std::vector<std::string> flags_;
  std::string dir_;
  std::string endpoint_;
  pid_t pid_ = -1;
};

}  // namespace leasehold::testing
