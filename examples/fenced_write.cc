// fenced_write: the seed's GC-pause scenario, and why a lock's fencing token saves the data.
//
// Holder A takes the lock, then stalls (as in a long GC pause: it stops renewing its lease and does
// nothing) for longer than its lease's TTL. The lease expires, B takes the lock with a higher
// token and writes. A wakes up still believing it holds the lock and writes too — and both fences
// refuse it:
//   1. the lock-key guard: a Txn that only applies while A's lock key (create_revision == token)
//      still exists;
//   2. the high-water mark: the resource stores the highest token it has accepted and refuses
//      lower ones (what a storage service outside Leasehold would do with the token).
// Exits 0 when B's write went through and both of A's stale writes were refused.
//
//   fenced_write [--endpoints=127.0.0.1:2379] [--ttl=2]
#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/leasehold/client.h"
#include "client/leasehold/managed_lease.h"
#include "client/leasehold/mutex.h"

namespace {

using leasehold::Client;
using leasehold::LockToken;

const char kData[] = "fenced-demo/data";
const char kMaxToken[] = "fenced-demo/max-token";

// Tokens as fixed-width decimals, so that comparing values compares numbers.
std::string Padded(int64_t token) { return absl::StrFormat("%020d", token); }

// Writes `value` if `token` is at least the highest token written so far (the high-water mark).
bool WriteWithHighWaterMark(Client* client, const LockToken& token, const std::string& value) {
  etcdserverpb::TxnRequest txn;
  auto* cmp = txn.add_compare();
  cmp->set_key(kMaxToken);
  cmp->set_target(etcdserverpb::Compare::VALUE);
  cmp->set_result(etcdserverpb::Compare::LESS);
  cmp->set_value(Padded(token.fencing_token + 1));  // max-token <= token
  auto* put_max = txn.add_success()->mutable_request_put();
  put_max->set_key(kMaxToken);
  put_max->set_value(Padded(token.fencing_token));
  auto* put_data = txn.add_success()->mutable_request_put();
  put_data->set_key(kData);
  put_data->set_value(value);
  auto response = client->Txn(txn);
  return response.ok() && response->succeeded();
}

// Writes `value` only while `token` still holds the lock.
bool WriteWhileHeld(Client* client, const LockToken& token, const std::string& value) {
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = leasehold::Mutex::HeldBy(token);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(kData);
  put->set_value(value);
  auto response = client->Txn(txn);
  return response.ok() && response->succeeded();
}

}  // namespace

int main(int argc, char** argv) {
  leasehold::ClientOptions options;
  options.endpoints = {"127.0.0.1:2379"};
  int64_t ttl = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--endpoints=", 0) == 0) {
      options.endpoints = absl::StrSplit(a.substr(12), ',', absl::SkipEmpty());
    } else if (a.rfind("--ttl=", 0) == 0) {
      ttl = std::stoll(a.substr(6));
    } else {
      std::fprintf(stderr, "usage: fenced_write [--endpoints=a:1,b:2] [--ttl=N]\n");
      return 2;
    }
  }
  auto client = Client::Connect(options);
  if (!client.ok()) return 2;
  Client* c = client->get();
  if (!c->Put(kMaxToken, Padded(0)).ok()) {
    std::fprintf(stderr, "cannot reach %s\n", options.endpoints[0].c_str());
    return 1;
  }

  auto a_lease = leasehold::ManagedLease::Grant(c, ttl);
  if (!a_lease.ok()) return 1;
  leasehold::Mutex a_lock(c, "fenced-demo/lock", (*a_lease)->id());
  auto a = a_lock.Lock(absl::Seconds(10));
  if (!a.ok()) return 1;
  std::printf("A holds the lock with token %lld, then stalls past its lease's %lld s TTL\n",
              static_cast<long long>(a->fencing_token), static_cast<long long>(ttl));
  (*a_lease)->Orphan();  // a stalled process renews nothing

  auto b_lease = leasehold::ManagedLease::Grant(c, 30);
  if (!b_lease.ok()) return 1;
  leasehold::Mutex b_lock(c, "fenced-demo/lock", (*b_lease)->id());
  auto b = b_lock.Lock(absl::Seconds(4 * ttl + 10));
  if (!b.ok()) {
    std::fprintf(stderr, "B did not get the lock: %s\n", b.status().ToString().c_str());
    return 1;
  }
  const bool b_wrote = WriteWithHighWaterMark(c, *b, "written by B");
  std::printf("A's lease expired; B holds the lock with token %lld; B's write: %s\n",
              static_cast<long long>(b->fencing_token), b_wrote ? "accepted" : "REFUSED");

  const bool a_guarded = WriteWhileHeld(c, *a, "written by stale A");
  const bool a_marked = WriteWithHighWaterMark(c, *a, "written by stale A");
  std::printf("A wakes and writes with token %lld: lock-key guard %s, high-water mark %s\n",
              static_cast<long long>(a->fencing_token), a_guarded ? "ACCEPTED" : "refused",
              a_marked ? "ACCEPTED" : "refused");
  auto data = c->Get(kData);
  std::printf("%s = %s\n", kData, data.ok() && data->has_value() ? (*data)->value().c_str() : "?");
  b_lock.Unlock().IgnoreError();
  const bool ok = b_wrote && !a_guarded && !a_marked;
  std::printf("%s\n", ok ? "the stale holder's writes were refused" : "FENCING FAILED");
  return ok ? 0 : 1;
}
