// Raft: the consensus state machine for one node (election, replication, reads, membership).
//
// Contract: purely reactive and deterministic. The caller drives time with Tick() and feeds
// peers' messages with Step(); outgoing messages accumulate until TakeMessages(). Randomness
// (election timeouts) comes only from a std::mt19937_64 seeded by Config::random_seed, so a run
// replays exactly from its inputs. Not thread-safe. Most callers want Node (node.h), which adds
// the Ready/Advance batching on top of this class.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "raft/progress.h"
#include "raft/quorum.h"
#include "raft/raft_log.h"
#include "raft/read_only.h"
#include "raft/storage.h"

namespace leasehold::raft {

inline constexpr uint64_t kNoNode = 0;

struct Config {
  // This node's id; must be non-zero.
  uint64_t id = kNoNode;
  // Followers campaign after a random timeout in [election_ticks, 2 * election_ticks).
  int election_ticks = 10;
  // Leader heartbeat period; must be < election_ticks.
  int heartbeat_ticks = 1;
  // Not owned; must outlive the Raft instance.
  const Storage* storage = nullptr;
  // Initial voters, used only when the storage holds no membership yet (fresh cluster).
  std::vector<uint64_t> peers;
  // Index already applied by the application (on restart).
  uint64_t applied = 0;
  // Upper bound on the entries' bytes in one append message (at least one entry is sent).
  uint64_t max_size_per_msg = 1 << 20;
  // Upper bound on committed entries' bytes handed out in one Ready.
  uint64_t max_committed_size_per_ready = 64 << 20;
  // Maximum number of unacknowledged appends per follower in replicate state.
  size_t max_inflight_msgs = 256;
  // Leader steps down if it cannot hear from a quorum within an election timeout; followers
  // ignore votes while they believe a leader is alive (this is what makes LeaseValid sound).
  bool check_quorum = false;
  // Candidates first run a pre-election that does not disturb terms (§9.6 of the thesis).
  bool pre_vote = false;
  // Followers forward proposals to the leader; otherwise proposals on followers fail.
  bool forward_proposals = true;
  // Seed of the election timeout generator.
  uint64_t random_seed = 0;

  [[nodiscard]] absl::Status Validate() const;
};

enum class Role { kFollower, kPreCandidate, kCandidate, kLeader };
const char* RoleName(Role role);

class Raft {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Raft>> Create(const Config& config);

  // Advances logical time by one tick.
  void Tick();
  // Handles a message from a peer (or a local request with term 0). Errors report dropped local
  // requests (e.g. a proposal with no leader); messages from peers never corrupt state.
  [[nodiscard]] absl::Status Step(pb::Message m);

  // Local requests.
  // Appends proposals (one entry each) as a single batch. Unavailable if there is no leader or a
  // transfer is under way; FailedPrecondition on a follower with forwarding disabled.
  [[nodiscard]] absl::Status Propose(const std::vector<std::string>& data);
  // Proposes one membership change; FailedPrecondition while another is unapplied.
  [[nodiscard]] absl::Status ProposeConfChange(const pb::ConfChange& change);
  // Requests a linearizable read; the answer arrives as a ReadState carrying `context`. The leader
  // keeps pending reads by context and ignores one it already holds, so a context must be unique
  // across the cluster, not only on this member; a read may also go unanswered when a message is
  // lost, and should then be asked again under a new context.
  [[nodiscard]] absl::Status ReadIndex(const std::string& context);
  // Asks the leader (this node) to hand leadership to `to`.
  [[nodiscard]] absl::Status TransferLeadership(uint64_t to);
  // Starts an election now (as if the election timeout had fired).
  [[nodiscard]] absl::Status Campaign();
  // Applies a committed membership change; returns the resulting configuration.
  pb::ConfState ApplyConfChange(const pb::ConfChange& change);
  // Reports whether a snapshot sent to `to` was delivered (success) or lost.
  void ReportSnapshot(uint64_t to, bool success);
  // True only on a leader that has heard, within the last election timeout measured from the
  // moment it sent, from a quorum of voters, while check_quorum is on and no transfer is under
  // way. Assumes all nodes' ticks run at the same rate and that nodes did not restart within the
  // last election timeout.
  bool LeaseValid() const;
  // On a leader: whether `id` is this node, or a peer that answered a heartbeat or append sent
  // within the last election timeout (the freshness LeaseValid counts). False elsewhere.
  bool PeerActive(uint64_t id) const;
  // True on a leader that is the only member (no other voter, no learner) and has committed an
  // entry of its term: nobody else can commit or apply anything, so its applied state answers a
  // linearizable read without a ReadIndex round.
  bool SoleMemberLeader() const;

  // Outgoing messages (flushes batched appends first).
  std::vector<pb::Message> TakeMessages();
  std::vector<ReadState> TakeReadStates();
  // Whether TakeMessages() or TakeReadStates() would return anything.
  bool HasPendingOutput() const {
    return !msgs_.empty() || !read_states_.empty() ||
           (broadcast_pending_ && role_ == Role::kLeader);
  }

  // Accessors.
  uint64_t id() const { return id_; }
  uint64_t term() const { return term_; }
  uint64_t vote() const { return vote_; }
  uint64_t lead() const { return lead_; }
  Role role() const { return role_; }
  uint64_t lead_transferee() const { return lead_transferee_; }
  pb::HardState hard_state() const;
  pb::ConfState conf_state() const;
  RaftLog& log() { return log_; }
  const RaftLog& log() const { return log_; }
  const std::map<uint64_t, Progress>& progress() const { return progress_; }
  bool IsVoter(uint64_t id) const;
  int randomized_election_ticks() const { return randomized_election_ticks_; }

  // Called by Node::Advance once the application persisted/applied a Ready.
  void OnApplied(uint64_t applied_index);

 private:
  Raft(const Config& config);

  void BecomeFollower(uint64_t term, uint64_t lead);
  void BecomePreCandidate();
  void BecomeCandidate();
  void BecomeLeader();
  void Reset(uint64_t term);
  void ResetRandomizedElectionTimeout();
  void StartElection(bool pre_vote, bool transfer);
  void RecordVote(uint64_t from, bool granted);
  VoteResult Poll() const;

  void TickElection();
  void TickHeartbeat();

  [[nodiscard]] absl::Status StepLeader(pb::Message& m);
  [[nodiscard]] absl::Status StepCandidate(pb::Message& m);
  [[nodiscard]] absl::Status StepFollower(pb::Message& m);
  void HandleVoteRequest(const pb::Message& m);
  void HandleAppend(const pb::Message& m);
  void HandleHeartbeat(const pb::Message& m);
  void HandleSnapshot(const pb::Message& m);
  void HandleAppendResponse(const pb::Message& m, Progress& pr);
  void HandleHeartbeatResponse(const pb::Message& m, Progress& pr);
  bool RestoreSnapshot(const pb::Snapshot& snapshot);

  void Send(pb::Message m);
  void AppendEntries(std::vector<pb::Entry> entries);
  bool MaybeSendAppend(uint64_t to, bool send_if_empty);
  void SendAppend(uint64_t to) { MaybeSendAppend(to, true); }
  void BroadcastAppend();
  void SendHeartbeat(uint64_t to, const std::string& context);
  void BroadcastHeartbeat(const std::string& context);
  void SendTimeoutNow(uint64_t to);
  bool MaybeCommit();
  void OnCommitAdvanced();
  bool CommittedInCurrentTerm() const;
  void ServeReadIndex(const pb::Message& m);
  void RespondToRead(const PendingRead& read);
  bool ReadQuorumReached(const std::set<uint64_t>* acks) const;
  bool QuorumActive();
  bool HasUnappliedConfChange() const;
  void AbortLeaderTransfer() { lead_transferee_ = kNoNode; }
  void SetMembership(const pb::ConfState& cs);
  std::vector<uint64_t> Voters() const;

  const uint64_t id_;
  const int election_ticks_;
  const int heartbeat_ticks_;
  const uint64_t max_size_per_msg_;
  const size_t max_inflight_;
  const bool check_quorum_;
  const bool pre_vote_;
  const bool forward_proposals_;

  uint64_t term_ = 0;
  uint64_t vote_ = kNoNode;
  uint64_t lead_ = kNoNode;
  Role role_ = Role::kFollower;
  RaftLog log_;
  std::map<uint64_t, Progress> progress_;
  std::map<uint64_t, bool> votes_;

  uint64_t lead_transferee_ = kNoNode;
  uint64_t pending_conf_index_ = 0;
  ReadOnly read_only_;
  std::vector<pb::Message> pending_read_requests_;  // waiting for a current-term commit
  std::vector<ReadState> read_states_;
  std::vector<pb::Message> msgs_;
  bool broadcast_pending_ = false;

  int election_elapsed_ = 0;
  int heartbeat_elapsed_ = 0;
  int randomized_election_ticks_ = 0;
  uint64_t now_ = 0;  // ticks since creation; only compared with itself
  std::mt19937_64 rng_;
};

}  // namespace leasehold::raft
