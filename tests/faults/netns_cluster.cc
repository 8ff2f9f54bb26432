#include "tests/faults/netns_cluster.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/command/power_cut_fault.h"

namespace leasehold::faults {

absl::Status Shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  if (rc != 0) return absl::InternalError(absl::StrCat("`", command, "` exited with ", rc));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<NetnsCluster>> NetnsCluster::Create(const ClusterOptions& options) {
  std::unique_ptr<NetnsCluster> cluster(new NetnsCluster(options));
  if (absl::Status s = cluster->Setup(); !s.ok()) return s;
  for (int i = 0; i < options.nodes; ++i) {
    if (absl::Status s = cluster->Start(i); !s.ok()) return s;
  }
  return cluster;
}

namespace {
// Where the other members reach a member, and, with a delay relay in front, where the member
// itself listens inside its namespace.
constexpr int kPeerPort = 2380;
constexpr int kRelayedPeerPort = 2390;
}  // namespace

NetnsCluster::NetnsCluster(ClusterOptions options)
    : options_(std::move(options)), members_(options_.nodes) {
  std::random_device rd;
  const unsigned r = rd();
  tag_ = absl::StrCat("lf", r % 9000 + 1000);
  subnet_ = absl::StrCat("10.", 100 + r % 100, ".", (r / 100) % 250 + 1);
}

NetnsCluster::~NetnsCluster() { Shutdown(); }

void NetnsCluster::Shutdown() {
  if (shut_down_.exchange(true)) return;
  for (int i = 0; i < size(); ++i) Kill(i);
  Teardown();
}

std::string NetnsCluster::Namespace(int i) const { return absl::StrCat(tag_, "-", i + 1); }
std::string NetnsCluster::Address(int i) const { return absl::StrCat(subnet_, ".", i + 1); }
std::string NetnsCluster::ClientEndpoint(int i) const { return absl::StrCat(Address(i), ":2379"); }
std::string NetnsCluster::BlobEndpoint(int i) const { return absl::StrCat(Address(i), ":10000"); }
std::string NetnsCluster::data_dir(int i) const {
  return absl::StrCat(options_.work_dir, "/m", i + 1);
}
std::string NetnsCluster::log_path(int i) const {
  return absl::StrCat(options_.work_dir, "/m", i + 1, ".log");
}

absl::Status NetnsCluster::InNamespace(int i, const std::string& command) const {
  return Shell(absl::StrCat("ip netns exec ", Namespace(i), " ", command, " >/dev/null 2>&1"));
}

absl::Status NetnsCluster::Setup() {
  const std::string bridge = tag_ + "b";
  if (!Shell(absl::StrCat("ip link add ", bridge, " type bridge 2>/dev/null && ip link set ",
                          bridge, " up && ip addr add ", subnet_, ".254/24 dev ", bridge))
           .ok()) {
    return absl::UnavailableError(
        "network namespaces cannot be made here (needs root and iproute2)");
  }
  set_up_ = true;
  for (int i = 0; i < size(); ++i) {
    const std::string ns = Namespace(i), veth = absl::StrCat(tag_, "v", i + 1);
    for (const std::string& step :
         {absl::StrCat("ip netns add ", ns),
          absl::StrCat("ip link add ", veth, " type veth peer name eth0 netns ", ns),
          absl::StrCat("ip link set ", veth, " master ", bridge, " up"),
          absl::StrCat("ip netns exec ", ns, " ip addr add ", Address(i), "/24 dev eth0"),
          absl::StrCat("ip netns exec ", ns, " ip link set eth0 up"),
          absl::StrCat("ip netns exec ", ns, " ip link set lo up")}) {
      if (absl::Status s = Shell(step); !s.ok()) return s;
    }
  }
  // Rules are tried once now, so that a machine without iptables fails here and not mid-campaign.
  if (!InNamespace(0, "iptables -F INPUT").ok()) {
    return absl::UnavailableError("iptables does not work inside the namespaces");
  }
  if (options_.delay_proxies) {
    for (int i = 0; i < size(); ++i) {
      auto proxy = DelayProxy::Start("/var/run/netns/" + Namespace(i), Address(i), kPeerPort,
                                     kRelayedPeerPort, peer_delay_, options_.seed * 100 + i);
      if (!proxy.ok()) return proxy.status();
      proxies_.push_back(*std::move(proxy));
    }
  }
  std::filesystem::create_directories(options_.work_dir);
  return absl::OkStatus();
}

void NetnsCluster::Teardown() {
  if (!set_up_) return;
  for (auto& proxy : proxies_) proxy->Stop();
  for (int i = 0; i < size(); ++i) {
    (void)Shell(absl::StrCat("ip link del ", tag_, "v", i + 1, " 2>/dev/null"));
    (void)Shell(absl::StrCat("ip netns del ", Namespace(i), " 2>/dev/null"));
  }
  (void)Shell(absl::StrCat("ip link del ", tag_, "b 2>/dev/null"));
  set_up_ = false;
}

absl::Status NetnsCluster::Start(int i) {
  if (shut_down_) return absl::CancelledError("the cluster is shut down");
  if (members_[i].pid > 0) return absl::OkStatus();
  std::vector<std::string> initial;
  for (int j = 0; j < size(); ++j)
    initial.push_back(absl::StrCat("m", j + 1, "=http://", Address(j), ":", kPeerPort));
  const std::string a = Address(i);
  std::vector<std::string> args = {
      options_.binary,
      "--name",
      absl::StrCat("m", i + 1),
      "--data-dir",
      data_dir(i),
      "--listen-client-urls",
      absl::StrCat("http://", a, ":2379"),
      "--advertise-client-urls",
      absl::StrCat("http://", a, ":2379"),
      "--listen-peer-urls",
      options_.delay_proxies ? absl::StrCat("http://127.0.0.1:", kRelayedPeerPort)
                             : absl::StrCat("http://", a, ":", kPeerPort),
      "--initial-advertise-peer-urls",
      absl::StrCat("http://", a, ":", kPeerPort),
      "--initial-cluster",
      absl::StrJoin(initial, ","),
      "--initial-cluster-token",
      tag_,
      "--listen-blob-urls",
      absl::StrCat("http://", a, ":10000"),
      "--listen-metrics-urls",
      absl::StrCat("http://", a, ":2381"),
      "--election-timeout",
      std::to_string(options_.election_ms),
      "--heartbeat-interval",
      std::to_string(options_.heartbeat_ms),
      "--snapshot-count",
      std::to_string(options_.snapshot_count),
      "--experimental-snapshot-catchup-entries",
      std::to_string(options_.snapshot_catchup_entries),
  };
  const std::string ns_path = "/var/run/netns/" + Namespace(i);
  const std::string log = log_path(i);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    const int ns = open(ns_path.c_str(), O_RDONLY);
    if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) _exit(126);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    if (options_.power_cuts) {
      setenv("LEASEHOLD_FAULT_POWER_CUT", absl::StrCat("signal,seed=", options_.seed + i).c_str(),
             1);
    }
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  members_[i] = {pid, false};
  return absl::OkStatus();
}

void NetnsCluster::Kill(int i) {
  Member& m = members_[i];
  if (m.pid <= 0) return;
  kill(m.pid, SIGKILL);
  waitpid(m.pid, nullptr, 0);
  m = Member{};
}

void NetnsCluster::Pause(int i) {
  if (members_[i].pid > 0 && !members_[i].paused && kill(members_[i].pid, SIGSTOP) == 0)
    members_[i].paused = true;
}

void NetnsCluster::Resume(int i) {
  if (members_[i].pid > 0 && members_[i].paused) {
    kill(members_[i].pid, SIGCONT);
    members_[i].paused = false;
  }
}

absl::Status NetnsCluster::Cut(int a, int b) {
  if (absl::Status s =
          InNamespace(a, absl::StrCat("iptables -A INPUT -s ", Address(b), " -j DROP"));
      !s.ok())
    return s;
  return InNamespace(b, absl::StrCat("iptables -A INPUT -s ", Address(a), " -j DROP"));
}

absl::Status NetnsCluster::Lossy(double probability) {
  for (int i = 0; i < size(); ++i) {
    for (int j = 0; j < size(); ++j) {
      if (i == j) continue;
      absl::Status s = InNamespace(
          i, absl::StrCat("iptables -A INPUT -s ", Address(j),
                          " -m statistic --mode random --probability ", probability, " -j DROP"));
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

void NetnsCluster::SetPeerDelay(int mean_ms, int jitter_ms) {
  peer_delay_->jitter_ms = jitter_ms;
  peer_delay_->mean_ms = mean_ms;
}

absl::Status NetnsCluster::HealNetwork() {
  SetPeerDelay(0, 0);
  absl::Status result;
  for (int i = 0; i < size(); ++i) result.Update(InNamespace(i, "iptables -F INPUT"));
  return result;
}

namespace {

// The bytes-lost figure of the last power cut a member's log reports; 0 when it has none.
int64_t LastPowerCutLoss(const std::string& log_path) {
  std::ifstream log(log_path);
  int64_t lost = 0;
  const std::string field = "\"bytes-lost\":\"";
  for (std::string line; std::getline(log, line);) {
    if (line.find("power cut") == std::string::npos) continue;
    if (const size_t at = line.find(field); at != std::string::npos)
      lost = std::strtoll(line.c_str() + at + field.size(), nullptr, 10);
  }
  return lost;
}

}  // namespace

int NetnsCluster::SnapshotsInstalled(int i) const {
  std::ifstream log(log_path(i));
  int installed = 0;
  for (std::string line; std::getline(log, line);)
    installed += line.find("installed a snapshot from the leader") != std::string::npos;
  return installed;
}

int64_t NetnsCluster::PowerCut(int i) {
  Member& m = members_[i];
  if (m.pid <= 0) return -1;
  if (m.paused || !options_.power_cuts) {
    Kill(i);
    return -1;
  }
  kill(m.pid, SIGUSR2);
  int status = 0;
  bool exited = false;
  // The cut comes at the member's next write; members write all the time under the workloads.
  for (int waited_ms = 0; waited_ms < 5000 && !exited; waited_ms += 10) {
    exited = waitpid(m.pid, &status, WNOHANG) == m.pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!exited) {
    Kill(i);
    return -1;
  }
  m = Member{};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != server::kPowerCutExitCode) return -1;
  return LastPowerCutLoss(log_path(i));
}

}  // namespace leasehold::faults
