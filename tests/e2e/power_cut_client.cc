// power_cut_client: the writer and the checker of the power-cut test.
//
//   power_cut_client write --endpoints=a:1,b:2 --acked=FILE --round=R [--writers=8] [--seconds=30]
//     Writers each loop over: a transaction putting three keys pc/txn/R/W/S/{a,b,c} with one
//     value; and, every fourth step, a lease grant (TTL 1 h) followed by a put of pc/lease/ID on
//     it. Each acknowledged step is appended to FILE ("txn R/W/S", "lease ID", "leasekey ID") as
//     soon as it is answered. Endpoints are tried in turn. Runs until killed or for --seconds.
//
//   power_cut_client check --endpoints=a:1 --acked=FILE
//     Checks against the member at the first endpoint: every acknowledged transaction is there;
//     every transaction that is there, acknowledged or not, has its three keys with one value and
//     one revision (nothing half-applied); every acknowledged lease exists with its TTL, holding
//     its key when that put was acknowledged. Prints one line per check, exits non-zero on any
//     failure.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/common/endpoint_stubs.h"

namespace {

constexpr int64_t kLeaseTtl = 3600;

struct Flags {
  std::string mode;
  std::vector<std::string> endpoints;
  std::string acked;
  std::string round = "0";
  int writers = 8;
  double seconds = 30;
};

std::vector<std::string> SplitCommas(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

std::unique_ptr<grpc::ClientContext> Context(double seconds) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  return context;
}

using Endpoints = leasehold::testing::EndpointStubs;

// Appends whole lines to the acknowledgement file, each written out before the next step starts.
class AckLog {
 public:
  explicit AckLog(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {}
  ~AckLog() {
    if (file_ != nullptr) std::fclose(file_);
  }
  bool ok() const { return file_ != nullptr; }
  void Record(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    std::fprintf(file_, "%s\n", line.c_str());
    std::fflush(file_);
  }

 private:
  std::mutex mu_;
  std::FILE* file_;
};

int Write(const Flags& flags) {
  Endpoints endpoints(flags.endpoints);
  AckLog acked(flags.acked);
  if (!acked.ok()) {
    std::fprintf(stderr, "cannot open %s\n", flags.acked.c_str());
    return 2;
  }
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(flags.seconds * 1000));
  std::vector<std::thread> writers;
  for (int w = 0; w < flags.writers; ++w) {
    writers.emplace_back([&, w] {
      size_t target = w;  // the endpoint this writer uses; the next one after a failure
      for (int64_t step = 0; std::chrono::steady_clock::now() < end; ++step) {
        bool ok = false;
        if (step % 4 == 3) {
          etcdserverpb::LeaseGrantRequest grant;
          grant.set_ttl(kLeaseTtl);
          etcdserverpb::LeaseGrantResponse granted;
          ok = endpoints.lease(target)->LeaseGrant(Context(2).get(), grant, &granted).ok();
          if (ok) {
            acked.Record("lease " + std::to_string(granted.id()));
            etcdserverpb::PutRequest put;
            put.set_key("pc/lease/" + std::to_string(granted.id()));
            put.set_value("held");
            put.set_lease(granted.id());
            etcdserverpb::PutResponse response;
            ok = endpoints.kv(target)->Put(Context(2).get(), put, &response).ok();
            if (ok) acked.Record("leasekey " + std::to_string(granted.id()));
          }
        } else {
          const std::string id = flags.round + "/" + std::to_string(w) + "/" + std::to_string(step);
          etcdserverpb::TxnRequest txn;
          for (const char* part : {"a", "b", "c"}) {
            auto* put = txn.add_success()->mutable_request_put();
            put->set_key("pc/txn/" + id + "/" + part);
            put->set_value(id);
          }
          etcdserverpb::TxnResponse response;
          ok = endpoints.kv(target)->Txn(Context(2).get(), txn, &response).ok();
          if (ok) acked.Record("txn " + id);
        }
        if (!ok) {
          ++target;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  return 0;
}

int failed = 0;
void Check(bool ok, const std::string& what) {
  if (!ok) ++failed;
  std::printf("%s - %s\n", ok ? "ok  " : "FAIL", what.c_str());
}

int CheckAcknowledged(const Flags& flags) {
  Endpoints endpoints({flags.endpoints.front()});
  std::set<std::string> txns;
  std::map<int64_t, bool> leases;  // id -> its key's put was acknowledged
  std::ifstream in(flags.acked);
  for (std::string kind, id; in >> kind >> id;) {
    if (kind == "txn") txns.insert(id);
    if (kind == "lease") leases.emplace(std::stoll(id), false);
    if (kind == "leasekey") leases[std::stoll(id)] = true;
  }
  // Every transaction that is there, by id: its keys' values and revisions.
  etcdserverpb::RangeRequest range;
  range.set_key("pc/txn/");
  range.set_range_end("pc/txn0");
  etcdserverpb::RangeResponse all;
  grpc::Status st = endpoints.kv(0)->Range(Context(20).get(), range, &all);
  Check(st.ok(), "the restarted member answers a linearizable range" +
                     (st.ok() ? "" : " (" + st.error_message() + ")"));
  if (!st.ok()) return 1;
  struct Seen {
    std::set<std::string> parts, values;
    std::set<int64_t> revisions;
  };
  std::map<std::string, Seen> present;
  for (const auto& kv : all.kvs()) {
    const std::string& key = kv.key();
    const size_t slash = key.rfind('/');
    Seen& seen = present[key.substr(7, slash - 7)];
    seen.parts.insert(key.substr(slash + 1));
    seen.values.insert(kv.value());
    seen.revisions.insert(kv.mod_revision());
  }
  int lost = 0, torn = 0;
  std::string example;
  for (const std::string& id : txns) {
    if (!present.contains(id)) {
      ++lost;
      example = "lost " + id;
    }
  }
  for (const auto& [id, seen] : present) {
    if (seen.parts.size() != 3 || seen.values != std::set<std::string>{id} ||
        seen.revisions.size() != 1) {
      ++torn;
      example = "torn " + id;
    }
  }
  Check(lost == 0, std::to_string(txns.size()) + " acknowledged transactions all there (" +
                       std::to_string(lost) + " lost) " + (lost ? example : ""));
  Check(torn == 0, std::to_string(present.size()) +
                       " transactions there, each whole in one revision (" + std::to_string(torn) +
                       " torn) " + (torn ? example : ""));
  int missing = 0;
  for (const auto& [id, with_key] : leases) {
    etcdserverpb::LeaseTimeToLiveRequest request;
    request.set_id(id);
    request.set_keys(true);
    etcdserverpb::LeaseTimeToLiveResponse response;
    const bool ok = endpoints.lease(0)->LeaseTimeToLive(Context(5).get(), request, &response).ok();
    const std::string key = "pc/lease/" + std::to_string(id);
    const bool has_key = response.keys_size() == 1 && response.keys(0) == key;
    if (!ok || response.ttl() <= 0 || response.grantedttl() != kLeaseTtl ||
        (with_key && !has_key)) {
      ++missing;
      example = "lease " + std::to_string(id) + " ttl " + std::to_string(response.ttl());
    }
  }
  Check(missing == 0, std::to_string(leases.size()) +
                          " acknowledged leases all there with their keys (" +
                          std::to_string(missing) + " missing) " + (missing ? example : ""));
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (argc > 1) flags.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals), value = arg.substr(equals + 1);
    if (equals == std::string::npos) {
      std::fprintf(stderr, "expected --name=value, got %s\n", arg.c_str());
      return 2;
    } else if (name == "--endpoints") {
      flags.endpoints = SplitCommas(value);
    } else if (name == "--acked") {
      flags.acked = value;
    } else if (name == "--round") {
      flags.round = value;
    } else if (name == "--writers") {
      flags.writers = std::atoi(value.c_str());
    } else if (name == "--seconds") {
      flags.seconds = std::atof(value.c_str());
    } else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  if (flags.endpoints.empty() || flags.acked.empty() || flags.writers < 1) {
    std::fprintf(stderr, "usage: power_cut_client write|check --endpoints=... --acked=FILE\n");
    return 2;
  }
  if (flags.mode == "write") return Write(flags);
  if (flags.mode == "check") return CheckAcknowledged(flags);
  std::fprintf(stderr, "unknown mode '%s' (write or check)\n", flags.mode.c_str());
  return 2;
}
