#include "client/bench/options.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>

namespace leasehold::bench {
namespace {

const char kUsage[] =
    "usage: leasehold-bench WORKLOAD [flags]\n"
    "Drives any etcd v3 gRPC server (Leasehold or etcd) and reports ops/s, errors by code and "
    "latency.\n\n"
    "workloads:\n"
    "  lease-grant        LeaseGrant (then LeaseRevoke unless --revoke=false; with --with-key, "
    "a Put of a key with the lease in between)\n"
    "  lease-keepalive    LeaseKeepAlive over --clients streams, --leases-per-stream leases each\n"
    "  lease-timetolive   LeaseTimeToLive on one lease per client\n"
    "  put                Put, --key-size/--value-size/--key-space, --with-lease\n"
    "  range              Range of single keys, linearizable or --serializable\n"
    "  txn-lock           etcd's Mutex cycle: grant, txn put-if-absent, range owner, (contended: "
    "wait for\n"
    "                     the older key's deletion by watch), delete, revoke; --locks < --clients "
    "contends.\n"
    "                     Checks that holders never overlap and fencing tokens (create_revision) "
    "only grow;\n"
    "                     contended, reports the p50 of each hand-over's legs (delete to the next "
    "waiter's\n"
    "                     event, event to that waiter's read finding no older key)\n"
    "  watch-fanout       --clients watchers on one prefix, --watchers-per-stream of them per "
    "stream (default\n"
    "                     1); puts at --rate (default 10/s), or as fast as --writers closed-loop "
    "writers\n"
    "                     get them taken (saturation); reports events delivered per second (until "
    "the\n"
    "                     last receipt) and put-to-watcher latency\n"
    "  lock-rpc           etcd's Lock RPC (v3lockpb): Lock then Unlock, on a lease per client; "
    "--locks names shared by the clients\n"
    "  expiry-storm       grant --storm-leases leases of --storm-ttl s, one key each; time until "
    "all keys\n"
    "                     are gone, and the p99 of a background put load before and during the "
    "storm\n\n"
    "flags:\n"
    "  --endpoints=[https://]host:port[,...]  --conns=N  --clients=N  --total=N | "
    "--duration=SECONDS\n"
    "  --cacert=FILE --cert=FILE --key=FILE  (TLS, as etcdctl's; on with https:// endpoints or "
    "--cacert)\n"
    "  --rate=OPS_PER_S (open loop; latency from the intended start)  --json\n"
    "  --ttl=S --revoke=BOOL --with-key --leases-per-stream=N --key-size=N --value-size=N "
    "--key-space=N\n"
    "  --with-lease --serializable --locks=N --watchers-per-stream=N --writers=N --storm-leases=N "
    "--storm-ttl=S --storm-put-rate=R --storm-drain-timeout=S\n"
    "  --idle-watch-streams=N  (any workload) hold N watch streams open meanwhile, each watching a "
    "key\n"
    "                          nobody writes: what open streams cost every other call\n";

[[noreturn]] void Usage(const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "leasehold-bench: %s\n\n", error.c_str());
  std::fputs(kUsage, error.empty() ? stdout : stderr);
  std::exit(error.empty() ? 0 : 2);
}

int64_t Int(const std::string& name, const std::string& v) {
  char* end = nullptr;
  long long parsed = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || parsed < 0) Usage("bad value for --" + name + ": " + v);
  return parsed;
}

double Double(const std::string& name, const std::string& v) {
  char* end = nullptr;
  double parsed = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || parsed < 0) Usage("bad value for --" + name + ": " + v);
  return parsed;
}

bool Bool(const std::string& name, const std::string& v) {
  if (v.empty() || v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  Usage("bad value for --" + name + ": " + v);
}

}  // namespace

Options ParseOptions(int argc, char** argv) {
  Options o;
  using Setter = std::function<void(const std::string&, const std::string&)>;
  const std::map<std::string, Setter> setters = {
      {"endpoints",
       [&](auto&, auto& v) {
         o.endpoints.clear();
         std::stringstream ss(v);
         for (std::string ep; std::getline(ss, ep, ',');) {
           if (ep.rfind("http://", 0) == 0) ep = ep.substr(7);
           if (ep.rfind("https://", 0) == 0) {
             ep = ep.substr(8);
             o.tls = true;
           }
           if (!ep.empty()) o.endpoints.push_back(ep);
         }
         if (o.endpoints.empty()) Usage("--endpoints is empty");
       }},
      {"cacert",
       [&](auto&, auto& v) {
         o.cacert = v;
         o.tls = true;
       }},
      {"cert", [&](auto&, auto& v) { o.cert = v; }},
      {"key", [&](auto&, auto& v) { o.key = v; }},
      {"conns",
       [&](auto& n, auto& v) { o.conns = static_cast<int>(std::max<int64_t>(1, Int(n, v))); }},
      {"clients",
       [&](auto& n, auto& v) { o.clients = static_cast<int>(std::max<int64_t>(1, Int(n, v))); }},
      {"total", [&](auto& n, auto& v) { o.total = Int(n, v); }},
      {"duration", [&](auto& n, auto& v) { o.duration_s = Double(n, v); }},
      {"rate", [&](auto& n, auto& v) { o.rate = Double(n, v); }},
      {"json", [&](auto& n, auto& v) { o.json = Bool(n, v); }},
      {"ttl", [&](auto& n, auto& v) { o.ttl = Int(n, v); }},
      {"revoke", [&](auto& n, auto& v) { o.revoke = Bool(n, v); }},
      {"with-key", [&](auto& n, auto& v) { o.with_key = Bool(n, v); }},
      {"leases-per-stream",
       [&](auto& n, auto& v) {
         o.leases_per_stream = static_cast<int>(std::max<int64_t>(1, Int(n, v)));
       }},
      {"key-size",
       [&](auto& n, auto& v) { o.key_size = static_cast<int>(std::max<int64_t>(1, Int(n, v))); }},
      {"value-size", [&](auto& n, auto& v) { o.value_size = static_cast<int>(Int(n, v)); }},
      {"key-space", [&](auto& n, auto& v) { o.key_space = std::max<int64_t>(1, Int(n, v)); }},
      {"with-lease", [&](auto& n, auto& v) { o.with_lease = Bool(n, v); }},
      {"serializable", [&](auto& n, auto& v) { o.serializable = Bool(n, v); }},
      {"locks", [&](auto& n, auto& v) { o.locks = static_cast<int>(Int(n, v)); }},
      {"watchers-per-stream",
       [&](auto& n, auto& v) { o.watchers_per_stream = static_cast<int>(Int(n, v)); }},
      {"writers", [&](auto& n, auto& v) { o.writers = static_cast<int>(Int(n, v)); }},
      {"idle-watch-streams",
       [&](auto& n, auto& v) {
         o.idle_watch_streams = static_cast<int>(std::max<int64_t>(0, Int(n, v)));
       }},
      {"storm-leases", [&](auto& n, auto& v) { o.storm_leases = std::max<int64_t>(1, Int(n, v)); }},
      {"storm-ttl", [&](auto& n, auto& v) { o.storm_ttl = std::max<int64_t>(1, Int(n, v)); }},
      {"storm-put-rate", [&](auto& n, auto& v) { o.storm_put_rate = Double(n, v); }},
      {"storm-drain-timeout", [&](auto& n, auto& v) { o.storm_drain_timeout_s = Double(n, v); }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") Usage("");
    if (arg.rfind("--", 0) != 0) {
      if (!o.workload.empty()) Usage("unexpected argument: " + arg);
      o.workload = arg;
      continue;
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = setters.find(name);
    if (it == setters.end()) Usage("unknown flag --" + name);
    const bool boolean = name == "json" || name == "revoke" || name == "with-key" ||
                         name == "with-lease" || name == "serializable";
    if (!has_value && !boolean) {
      if (i + 1 >= argc) Usage("--" + name + " needs a value");
      value = argv[++i];
    }
    it->second(name, value);
  }
  if (o.workload.empty()) Usage("no workload given");
  if (o.cert.empty() != o.key.empty()) Usage("--cert and --key go together");
  return o;
}

}  // namespace leasehold::bench
