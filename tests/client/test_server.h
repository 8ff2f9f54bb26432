// A real leasehold process for client-library tests: own data dir and free ports, started with extra
// flags, killed (or paused) on demand. LEASEHOLD_BINARY is set by CMake.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace leasehold::testing {

class TestServer {
 public:
  explicit TestServer(std::vector<std::string> extra_flags = {});
  ~TestServer();

  // Starts the process (again, on the same ports and data dir) and waits until it serves.
  void Start();
  void Kill();  // SIGKILL, and reaps it
  void Pause();   // SIGSTOP
  void Resume();  // SIGCONT
  const std::string& endpoint() const { return endpoint_; }

  // A port nothing listens on.
  static int FreePort();

 private:
  std::vector<std::string> flags_;
  std::string dir_;
  std::string endpoint_;
  pid_t pid_ = -1;
};

}  // namespace leasehold::testing
