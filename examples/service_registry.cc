// service_registry: the registry use case end to end with leasehold::Registry.
//
//   service_registry --endpoints=127.0.0.1:2379 register <service> <instance> <address> [--ttl=5]
//       registers the instance under a lease it keeps alive, prints "registered <key> lease <id>",
//       and stays registered until interrupted (SIGINT/SIGTERM deregisters at once) or killed (the
//       instance then vanishes within TTL + the server's expiry bound). Exits 3 if the lease is
//       lost.
//   service_registry --endpoints=... watch <service>
//       prints the registered instances, then one line per change as it happens:
//       "<unix ms> up <instance> <address>" or "<unix ms> down <instance>".
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/leasehold/client.h"
#include "client/leasehold/registry.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: service_registry [--endpoints=a:1,b:2] register <service> <instance> "
               "<address> [--ttl=N]\n"
               "       service_registry [--endpoints=a:1,b:2] watch <service>\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> endpoints = {"127.0.0.1:2379"};
  int64_t ttl = 5;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--endpoints=", 0) == 0) {
      endpoints = absl::StrSplit(a.substr(12), ',', absl::SkipEmpty());
    } else if (a.rfind("--ttl=", 0) == 0) {
      ttl = std::stoll(a.substr(6));
    } else {
      args.push_back(a);
    }
  }
  if (args.empty()) return Usage();
  leasehold::ClientOptions options;
  options.endpoints = endpoints;
  auto client = leasehold::Client::Connect(options);
  if (!client.ok()) return Usage();
  leasehold::Registry registry(client->get());

  if (args[0] == "register" && args.size() == 4) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    auto registration = registry.Register(args[1], args[2], args[3], ttl);
    if (!registration.ok()) {
      std::fprintf(stderr, "register failed: %s\n", registration.status().ToString().c_str());
      return 1;
    }
    std::printf("registered %s lease %lld\n", (*registration)->key().c_str(),
                static_cast<long long>((*registration)->lease_id()));
    std::fflush(stdout);
    // Wait for a signal, or for the registration to be lost; a lost lease is reported and fatal.
    auto lost = (*registration)->lost();
    lost.OnCancel([] { kill(getpid(), SIGTERM); });
    int received = 0;
    sigwait(&signals, &received);
    if (lost.cancelled()) {
      std::fprintf(stderr, "registration lost: %s\n", lost.reason().c_str());
      return 3;
    }
    return 0;  // ~Registration revokes the lease: the instance disappears now
  }
  if (args[0] == "watch" && args.size() == 2) {
    std::vector<leasehold::Instance> initial;
    auto watch =
        registry.WatchService(args[1], &initial, [](const leasehold::Instance& i, bool up) {
          const long long ms = absl::ToUnixMillis(absl::Now());
          if (up) {
            std::printf("%lld up %s %s\n", ms, i.name.c_str(), i.value.c_str());
          } else {
            std::printf("%lld down %s\n", ms, i.name.c_str());
          }
          std::fflush(stdout);
        });
    if (!watch.ok()) {
      std::fprintf(stderr, "watch failed: %s\n", watch.status().ToString().c_str());
      return 1;
    }
    for (const auto& i : initial) std::printf("instance %s %s\n", i.name.c_str(), i.value.c_str());
    std::fflush(stdout);
    absl::Status ended = (*watch)->Wait();
    std::fprintf(stderr, "watch ended: %s\n", ended.ToString().c_str());
    return 1;
  }
  return Usage();
}
