#include "server/corruption/corruption_monitor.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/member/member.h"
#include "server/observability/log.h"

namespace leasehold::server {
namespace {

std::string HexId(uint64_t id) { return absl::StrCat(absl::Hex(id)); }

}  // namespace

std::optional<uint64_t> FindCorruptMember(uint64_t self_id, const LocalHash& before,
                                          const LocalHash& after,
                                          const std::vector<PeerHash>& peers) {
  std::optional<uint64_t> corrupt;
  auto found = [&corrupt](uint64_t id) {
    if (!corrupt) corrupt = id;
  };
  if (after.hash != before.hash && after.revision == before.revision &&
      after.compact_revision == before.compact_revision) {
    LogWarn("found hash mismatch", {{"revision-1", std::to_string(before.revision)},
                                    {"compact-revision-1", std::to_string(before.compact_revision)},
                                    {"hash-1", std::to_string(before.hash)},
                                    {"revision-2", std::to_string(after.revision)},
                                    {"compact-revision-2", std::to_string(after.compact_revision)},
                                    {"hash-2", std::to_string(after.hash)}});
    found(self_id);
  }
  for (const PeerHash& peer : peers) {
    if (!peer.response) continue;
    const etcdserverpb::HashKVResponse& answer = *peer.response;
    const uint64_t id = answer.header().member_id();
    if (answer.header().revision() > after.revision) {
      LogWarn("revision from follower must be less than or equal to leader's",
              {{"leader-revision", std::to_string(after.revision)},
               {"follower-revision", std::to_string(answer.header().revision())},
               {"follower-peer-id", HexId(id)}});
      found(id);
    }
    if (answer.compact_revision() > after.compact_revision) {
      LogWarn("compact revision from follower must be less than or equal to leader's",
              {{"leader-compact-revision", std::to_string(after.compact_revision)},
               {"follower-compact-revision", std::to_string(answer.compact_revision())},
               {"follower-peer-id", HexId(id)}});
      found(id);
    }
    if (answer.compact_revision() == before.compact_revision && answer.hash() != before.hash) {
      LogWarn("same compact revision then hashes must match",
              {{"leader-compact-revision", std::to_string(after.compact_revision)},
               {"leader-hash", std::to_string(before.hash)},
               {"follower-compact-revision", std::to_string(answer.compact_revision())},
               {"follower-hash", std::to_string(answer.hash())},
               {"follower-peer-id", HexId(id)}});
      found(id);
    }
  }
  return corrupt;
}

CorruptionMonitor::CorruptionMonitor(Member* member, TlsFiles peer_tls, absl::Duration interval,
                                     absl::Duration timeout)
    : member_(member), peer_tls_(std::move(peer_tls)), interval_(interval), timeout_(timeout) {}

void CorruptionMonitor::Start() {
  if (interval_ <= absl::ZeroDuration()) return;
  LogInfo("enabled corruption checking", {{"local-member-id", HexId(member_->config().member_id)},
                                          {"interval", GoDuration(interval_)}});
  thread_ = std::thread([this] { Run(); });
}

void CorruptionMonitor::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void CorruptionMonitor::Run() {
  while (!stop_.WaitForNotificationWithTimeout(interval_)) {
    if (member_->proposer().leading_term() != 0) CheckOnce();
  }
}

bool CorruptionMonitor::AwaitAppliedState() {
  struct Outcome {
    absl::Mutex mu;
    std::optional<absl::Status> status;  // under mu
  };
  auto outcome = std::make_shared<Outcome>();
  member_->proposer().ReadBarrier([outcome](absl::Status st) {
    absl::MutexLock lock(&outcome->mu);
    outcome->status = std::move(st);
  });
  const absl::Time deadline = absl::Now() + timeout_;
  absl::MutexLock lock(&outcome->mu);
  while (!outcome->status && !stop_.HasBeenNotified() && absl::Now() < deadline) {
    outcome->mu.AwaitWithTimeout(
        absl::Condition(
            +[](std::optional<absl::Status>* s) { return s->has_value(); }, &outcome->status),
        absl::Milliseconds(100));
  }
  if (outcome->status && !outcome->status->ok()) {
    LogWarn("failed to check hash KV", {{"error", outcome->status->ToString()}});
  }
  return outcome->status && outcome->status->ok();
}

void CorruptionMonitor::CheckOnce() {
  storage::StateMachine& state = member_->state_machine();
  const uint64_t self_id = member_->config().member_id;
  auto hash_now = [&state]() -> std::optional<LocalHash> {
    auto hashed = state.HashKv(0);  // at the current revision, even one just compacted at
    if (!hashed.ok()) {
      LogWarn("failed to check hash KV", {{"error", hashed.status().ToString()}});
      return std::nullopt;
    }
    return LocalHash{hashed->hash, hashed->revision, hashed->compact_revision};
  };
  const std::optional<LocalHash> before = hash_now();
  if (!before) return;
  std::vector<PeerHash> peers;
  for (const internalpb::MemberRecord& record : state.members().List()) {
    if (record.id() == self_id) continue;
    if (stop_.HasBeenNotified()) return;  // each peer may take a whole timeout to answer
    PeerHash answer = AskPeerHash(record, before->revision, peer_tls_, timeout_);
    if (!answer.response) {
      LogWarn("failed hash kv request", {{"local-member-id", HexId(self_id)},
                                         {"requested-revision", std::to_string(before->revision)},
                                         {"remote-peer-id", HexId(record.id())},
                                         {"error", answer.error.ToString()}});
    }
    peers.push_back(std::move(answer));
  }
  if (!AwaitAppliedState()) return;
  const std::optional<LocalHash> after = hash_now();
  if (!after) return;
  if (std::optional<uint64_t> corrupt = FindCorruptMember(self_id, *before, *after, peers)) {
    internalpb::InternalRequest alarm;
    alarm.mutable_alarm()->set_action(etcdserverpb::AlarmRequest::ACTIVATE);
    alarm.mutable_alarm()->set_memberid(*corrupt);
    alarm.mutable_alarm()->set_alarm(etcdserverpb::CORRUPT);
    member_->Submit(std::move(alarm), [corrupt](const storage::ApplyResult& result) {
      if (!result.status.ok()) {
        LogWarn("failed to raise the CORRUPT alarm",
                {{"member-id", HexId(*corrupt)}, {"error", result.status.ToString()}});
      }
    });
  }
  int checked = 0;
  for (const PeerHash& peer : peers) checked += peer.response ? 1 : 0;
  LogInfo("finished peer corruption check", {{"number-of-peers-checked", std::to_string(checked)}});
}

}  // namespace leasehold::server
