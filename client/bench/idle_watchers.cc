#include "client/bench/idle_watchers.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace leasehold::bench {

IdleWatchers::IdleWatchers(Connections& connections, int streams, double timeout_s) {
  // Shared with the callbacks: a confirmation may arrive after a timed-out constructor returned.
  auto created = std::make_shared<std::atomic<int>>(0);
  for (int i = 0; i < streams; ++i) {
    streams_.push_back(std::make_unique<WatchClient>(connections.watch(i)));
    etcdserverpb::WatchCreateRequest create;
    create.set_key("bench-idle/" + std::to_string(i));
    streams_.back()->Watch(
        create, [](const etcdserverpb::WatchResponse&) { return true; },
        [created] { created->fetch_add(1); });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (created->load() < streams && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ready_ = created->load() == streams;
}

IdleWatchers::~IdleWatchers() {
  for (auto& s : streams_) s->Close();
  for (auto& s : streams_) s->Wait();
}

}  // namespace leasehold::bench
