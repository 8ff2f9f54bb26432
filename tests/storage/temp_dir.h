// A fresh directory under the system temp dir, removed when the test ends.
#pragma once

#include <filesystem>
#include <random>
#include <string>

namespace leasehold::testing {

class TempDir {
 public:
  TempDir() {
    path_ =
        std::filesystem::temp_directory_path() /
        ("leasehold-test-" + std::to_string(std::random_device{}()) + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }
  std::string Sub(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace leasehold::testing
