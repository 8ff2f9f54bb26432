// fenced_contender: one of many processes contending for one leasehold::Mutex while the test script
// pauses them at random (SIGSTOP/SIGCONT) for longer than their lease TTL — the seed's GC pause.
// In each turn it takes the lock, "works" a few ms, then writes "<token> <id> <seq>" to the
// register key guarded only by its lock (Mutex::HeldBy) — it does not check whether it still holds
// the lock, just as a paused process would not know. Prints "acquired A accepted W refused R".
//
//   fenced_contender --endpoints=... --id=N [--duration=15] [--ttl=2] [--work-ms=100]
//   [--holder-file=F]
//       --holder-file: on taking the lock it writes its pid there, so the script can pause the
//       holder.
//   fenced_contender --endpoints=... --check
//       reads the register's whole history and verifies that accepted writes' tokens never go down
//       (no stale holder wrote after a newer one, no two holders interleaved); exits 1 otherwise.
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "client/leasehold/client.h"
#include "client/leasehold/managed_lease.h"
#include "client/leasehold/mutex.h"

namespace {

const char kLock[] = "fenced-test/lock";
const char kRegister[] = "fenced-test/register";

int Check(leasehold::Client* client) {
  auto now = client->Get(kRegister);
  if (!now.ok() || !now->has_value()) {
    std::printf("check: no accepted write at all\n");
    return 1;
  }
  const int64_t last = (*now)->mod_revision();
  std::vector<std::string> values;
  absl::Notification done;
  etcdserverpb::WatchCreateRequest request;
  request.set_key(kRegister);
  request.set_start_revision(1);
  auto watch = client->StartWatch(request, [&](const etcdserverpb::WatchResponse& r) {
    for (const auto& e : r.events()) {
      if (e.type() == mvccpb::Event::PUT) values.push_back(e.kv().value());
      if (e.kv().mod_revision() >= last && !done.HasBeenNotified()) done.Notify();
    }
  });
  if (!done.WaitForNotificationWithTimeout(absl::Seconds(30))) {
    std::printf("check: history not delivered\n");
    return 1;
  }
  watch->Cancel();
  int64_t previous = 0;
  std::string previous_value;
  for (const auto& v : values) {
    const int64_t token = std::stoll(v.substr(0, v.find(' ')));
    if (token < previous) {
      std::printf("check: VIOLATION: '%s' accepted after '%s'\n", v.c_str(),
                  previous_value.c_str());
      return 1;
    }
    previous = token;
    previous_value = v;
  }
  std::printf("check: %zu accepted writes, tokens never decrease\n", values.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  leasehold::ClientOptions options;
  int id = 0;
  double duration = 15;
  int64_t ttl = 2;
  bool check = false;
  int work_ms = 100;
  std::string holder_file;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--endpoints=", 0) == 0)
      options.endpoints = absl::StrSplit(a.substr(12), ',', absl::SkipEmpty());
    else if (a.rfind("--id=", 0) == 0)
      id = std::stoi(a.substr(5));
    else if (a.rfind("--duration=", 0) == 0)
      duration = std::stod(a.substr(11));
    else if (a.rfind("--ttl=", 0) == 0)
      ttl = std::stoll(a.substr(6));
    else if (a.rfind("--work-ms=", 0) == 0)
      work_ms = std::stoi(a.substr(10));
    else if (a.rfind("--holder-file=", 0) == 0)
      holder_file = a.substr(14);
    else if (a == "--check")
      check = true;
    else
      return 2;
  }
  options.request_timeout = absl::Seconds(5);
  auto client = leasehold::Client::Connect(options);
  if (!client.ok()) return 2;
  if (check) return Check(client->get());

  std::mt19937 rng(static_cast<unsigned>(id * 7919 + 17));
  const absl::Time end = absl::Now() + absl::Seconds(duration);
  int acquired = 0, accepted = 0, refused = 0, seq = 0;
  while (absl::Now() < end) {
    auto lease = leasehold::ManagedLease::Grant(client->get(), ttl);
    if (!lease.ok()) continue;
    leasehold::Mutex mutex(client->get(), kLock, (*lease)->id());
    auto token = mutex.Lock(end - absl::Now());
    if (!token.ok()) continue;
    ++acquired;
    if (!holder_file.empty()) {
      // Written whole then renamed, so the script never reads half a pid.
      const std::string tmp = holder_file + "." + std::to_string(id);
      if (FILE* f = std::fopen(tmp.c_str(), "w")) {
        std::fprintf(f, "%d\n", static_cast<int>(getpid()));
        std::fclose(f);
        std::rename(tmp.c_str(), holder_file.c_str());
      }
    }
    // The work, during which the script may pause us past our lease's TTL.
    std::this_thread::sleep_for(std::chrono::milliseconds(work_ms / 2 + rng() % (work_ms + 1)));
    etcdserverpb::TxnRequest txn;
    *txn.add_compare() = leasehold::Mutex::HeldBy(*token);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(kRegister);
    put->set_value(std::to_string(token->fencing_token) + " " + std::to_string(id) + " " +
                   std::to_string(++seq));
    auto written = client->get()->Txn(txn);
    if (written.ok() && written->succeeded()) ++accepted;
    if (written.ok() && !written->succeeded()) ++refused;
    mutex.Unlock().IgnoreError();
  }
  std::printf("acquired %d accepted %d refused %d\n", acquired, accepted, refused);
  return 0;
}
