// NodeLoop: the one thread that owns this member's Raft node. It ticks the node, steps peers'
// messages, proposes what request handlers submit, and processes each Ready in the contract's
// order: persist entries and hard state in one synced write (every proposal waiting at that moment
// shares the fsync: group commit), send messages, apply committed entries to the state machine,
// serve reads whose index is applied, Advance. Results go to a responder thread, which publishes
// watch events and answers the waiting handlers, so writing to sockets never holds up the loop.
//
// A proposal made on a follower is forwarded to the leader by Raft; the member that proposed it
// answers its caller when it applies the entry (found by the entry's request id). A proposal that
// is not applied within the request timeout (a leader change dropped it) fails with etcd's
// "request timed out"; one made while there is no leader fails at once with "no leader".
//
// Leases: only the leader keeps the expiry queue. On becoming leader the node promotes the lease
// collection once it has applied an entry of its own term (so every lease granted before it is
// known); on losing leadership it demotes it at once.
//
// Thread-safety: every public method is thread-safe; callbacks run on the responder thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "raft/node.h"
#include "server/member/held_requests.h"
#include "server/member/loop_requests.h"
#include "server/member/proposer.h"
#include "server/peer/message_sender.h"
#include "storage/apply/state_machine.h"
#include "storage/backend/engine.h"
#include "storage/backend/raft_log_store.h"

namespace leasehold::server {

class NodeLoop : public Proposer {
 public:
  struct Options {
    uint64_t id = 0;
    // Founding voters of a new cluster: written as the log's first entries (term 1) when the log is
    // empty. Empty for a member joining an existing cluster, which learns everything from the
    // leader.
    std::vector<internalpb::MemberRecord> bootstrap_members;
    // What this member publishes about itself once it sees a leader.
    internalpb::MemberRecord self;
    int64_t tick_ms = 100;
    int election_ticks = 10;
    int64_t request_timeout_ms = 7000;
    // Extra time given to every lease's replicated deadline when this member becomes leader.
    int64_t promote_allowance_ms = 2000;
    // The log is compacted once this many entries were applied since the last compaction, keeping
    // `catch_up_entries` for slow followers; one further behind gets a snapshot (etcd's
    // --snapshot-count and its 5,000 catch-up entries).
    uint64_t snapshot_count = 100000;
    uint64_t catch_up_entries = 5000;
    // etcd's --strict-reconfig-check: when false, LeaderDecides checks only that a learner to
    // promote has caught up.
    bool strict_reconfig_check = true;
    // Raft's pre-vote (etcd's --pre-vote).
    bool pre_vote = true;
    // etcd's --experimental-warning-apply-duration: an entry whose apply takes longer is logged as
    // etcd logs it ("apply request took too long").
    int64_t warning_apply_duration_us = 100'000;
    // Apply the committed log while starting, and campaign at once if that leaves this member the
    // only voter (after --force-new-cluster removed the others) instead of an election timeout
    // later.
    bool replay_before_start = false;
    // The steady clock, in milliseconds, by which the loop ticks and times requests out; tests
    // inject their own. Null: the system's.
    std::function<int64_t()> steady_ms;
    // Called (on the loop thread, once) when this member applies its own removal.
    std::function<void()> on_removed;
    // Called (on the loop thread, once) when this member sees its publish (`self`) applied.
    std::function<void()> on_published;
    // Called on the loop thread, right after the entry is applied (so before its proposer is
    // answered), for each Authenticate grant that applied successfully.
    std::function<void(const internalpb::AuthenticateRecord&)> on_token_granted;
  };
  // Sees each applied group's events and the revision after it, in log order, on the responder
  // thread; `resync` is set (with no events) after a snapshot replaced the state, whose events were
  // never published. The group's writers and reads are answered when the observer calls `answer`
  // (at most once; it may, between the watchers that should hear first and the rest), or else
  // once it returns.
  using ApplyObserver =
      std::function<void(const std::vector<mvccpb::Event>& events, int64_t revision, bool resync,
                         const std::function<void()>& answer)>;
  using StatusDone = server::StatusDone;

  // None of the pointers is owned; all must outlive this object.
  NodeLoop(storage::Engine* engine, storage::StateMachine* state_machine,
           storage::RaftLogStore* log_store, MessageSender* sender, Options options,
           ApplyObserver observer);
  ~NodeLoop() override { Stop(); }

  // Bootstraps an empty log when founding a cluster, creates the Raft node (replaying entries
  // committed but not applied before the last stop) and starts the threads.
  [[nodiscard]] absl::Status Start();
  // Fails waiting requests with "server stopped" and joins the threads. Idempotent.
  void Stop();

  // Proposer.
  using Proposer::Propose;
  void Propose(internalpb::InternalRequest entry, Done done, Abandoned abandoned) override;
  uint64_t committed_index() const override { return committed_.load(std::memory_order_relaxed); }
  uint64_t applied_index() const override { return state_machine_->applied_index(); }
  int64_t pending_proposals() const override {
    return pending_proposals_.load(std::memory_order_relaxed);
  }
  uint64_t term() const override { return term_.load(std::memory_order_relaxed); }

  // Proposes a membership change; `done` gets OK once it is applied here.
  void ProposeConfChange(raftpb::ConfChange change, StatusDone done) override;
  // Linearizable read barrier (ReadIndex): `done` gets OK once this member has applied every entry
  // committed before the call, or "no leader" / "request timed out".
  void ReadBarrier(StatusDone done) override;
  // Hands messages received from peers to the node.
  void Receive(std::vector<raftpb::Message> messages);
  // etcd's MoveLeader: asks this member, if it leads, to hand leadership to voter `to`. `done` gets
  // OK once `to` is the leader, or etcd's "not leader", "bad leader transferee" or "leader transfer
  // took too long" (after the request timeout).
  void TransferLeadership(uint64_t to, StatusDone done) override;
  // Tells the node whether a snapshot it sent to member `to` arrived (so a lost one is sent again).
  void ReportSnapshot(uint64_t to, bool delivered);
  // etcd's initial election tick advance: `ticks` ticks pass at once, so that a member starting
  // with its peers reachable campaigns soon rather than a whole election timeout later. Ignored
  // once a leader is known (ticks would then only bring the leader's quorum check forward).
  void AdvanceTicks(int ticks);

  uint64_t id() const { return options_.id; }
  uint64_t leader_id() const override { return leader_.load(std::memory_order_relaxed); }
  bool is_leader() const { return leader_id() == options_.id; }
  // True while this member is leader and has heard from a quorum within the election timeout
  // (always true for a single voter): it may answer for leases without risking a second leader.
  bool lease_valid() const override;
  uint64_t leading_term() const override { return leading_term_.load(std::memory_order_relaxed); }

 private:
  struct Waiter {
    Done done;
    int64_t deadline_ms = 0;
    uint64_t forwarded_to =
        0;  // the leader it went to, when another member led: lost if that one died
  };
  struct StatusWaiter {
    StatusDone done;
    int64_t deadline_ms = 0;
    uint64_t asked = 0;  // read barriers: the leader the read index was asked of
  };
  // Proposals waiting for their entries to apply or for a leader (waiters_ and held_), as of the
  // loop's last round.
  std::atomic<int64_t> pending_proposals_{0};

  // The loop's clock (Options::steady_ms).
  int64_t NowMs() const;
  [[nodiscard]] absl::Status Bootstrap();
  void Run();
  void Respond();
  void HandleInbox(Inbox& inbox, int64_t now_ms);
  // On the leader (see LeaderDecides): a promotion waits until the learner's log is nearly the
  // leader's, as etcd's does (a learner promoted while far behind can cost the cluster its quorum).
  [[nodiscard]] absl::Status LearnerInSync(const raftpb::ConfChange& change) const;
  // The leader's checks on a membership change, before it is proposed: LearnerInSync and etcd's
  // connectivity checks (reconfig_checks.h) from the voters that answered within the last election
  // timeout. "no leader" (nothing proposed; the caller may retry) unless this member leads, has led
  // for an election timeout and surely still does, so that every live voter has answered it.
  // OK while no leader is known (the change is held for one).
  [[nodiscard]] absl::Status LeaderDecides(const raftpb::ConfChange& change, int64_t now_ms) const;
  void ProcessReady(int64_t now_ms);
  // Hands this Ready's messages to the transport (and leaves `rd->messages` empty).
  void SendReadyMessages(raft::Ready* rd);
  void ApplyCommitted(const std::vector<raftpb::Entry>& entries, AppliedGroup* group);
  // Logs `request` when applying it took longer than Options::warning_apply_duration_us.
  void WarnIfSlow(const internalpb::InternalRequest& request,
                  std::chrono::steady_clock::duration took) const;
  void OnSoftState(const raft::SoftState& soft);
  void InstallSnapshot(const raftpb::Snapshot& snapshot, rocksdb::WriteBatch* batch);
  void MaybeCompact();
  [[nodiscard]] absl::StatusOr<raftpb::Snapshot> MakeSnapshot();
  void MaybePublish(int64_t now_ms);
  void ExpireWaiters(int64_t now_ms, AppliedGroup* group);
  // Asks the node for a read index on behalf of `reads` (one request for all); when it cannot (no
  // leader), holds them for one if `leaderless` and there is room, else fails them in `failed`.
  void AskReadIndex(std::vector<PendingRead>& reads, bool leaderless, int64_t now_ms,
                    AppliedGroup* failed);
  // Asks again for the reads that have waited kReadIndexRetryMs for their read index.
  void RetryReadIndexes(int64_t now_ms);
  void FinishTransfers(AppliedGroup* group);
  void Hand(AppliedGroup group);

  storage::Engine* const engine_;
  storage::StateMachine* const state_machine_;
  storage::RaftLogStore* const log_store_;
  MessageSender* const sender_;
  const Options options_;
  const ApplyObserver observer_;

  // Owned by the loop thread.
  std::unique_ptr<raft::Node> node_;
  std::map<uint64_t, Waiter> waiters_;             // by entry request id
  std::map<uint64_t, StatusWaiter> conf_waiters_;  // by change id (MemberRecord.change_id)
  // Reads whose read index was asked for, by the request's context, until the index comes.
  struct AskedReads {
    std::vector<StatusWaiter> waiters;
    int64_t asked_ms = 0;
  };
  std::map<std::string, AskedReads> read_waiters_;
  // When the loop's oldest unanswered heartbeat went to each peer: its answer gives
  // etcd_network_peer_round_trip_time_seconds (real time, not the loop's clock: a metric only).
  std::map<uint64_t, std::chrono::steady_clock::time_point> heartbeats_out_;
  // A read index request or its answer travels in one message, which the transport may drop (a peer
  // not yet reachable) and Raft does not send again: reads still waiting this long ask again, as
  // etcd 3.5's do.
  static constexpr int64_t kReadIndexRetryMs = 500;
  std::multimap<uint64_t, StatusWaiter> reads_to_serve_;  // by read index, until applied
  HeldRequests held_;                                     // what came while no leader was known
  std::multimap<uint64_t, StatusWaiter> transfers_;       // by transferee, until it leads
  uint64_t next_read_context_;                            // from a random start: see AskReadIndex
  bool promote_pending_ = false;
  bool snapshot_installed_ = false;  // set by InstallSnapshot, cleared once the state is reloaded
  bool published_ = false;
  int64_t publish_retry_ms_ = 0;

  std::atomic<uint64_t> leader_{0};
  std::atomic<uint64_t> term_{0};
  std::atomic<uint64_t> leading_term_{0};  // see Proposer::leading_term
  std::atomic<uint64_t> committed_{0};
  std::atomic<bool> lease_valid_{false};
  // See ReadBarrier. The floor is the last log index when this member became the sole member
  // leader.
  std::atomic<bool> sole_member_leader_{false};
  std::atomic<uint64_t> sole_member_read_floor_{0};
  uint64_t new_leader_ = 0;  // loop thread only: a leader newly known this Ready; see ProcessReady
  int64_t leading_since_ms_ =
      0;  // loop thread only: when this member last became leader (steady clock)
  // When the loop last computed lease_valid_ (steady clock, ms): a loop stalled for longer than two
  // ticks cannot vouch for its leadership, whatever it computed last.
  std::atomic<int64_t> lease_checked_ms_{0};

  absl::Mutex mu_;
  Inbox inbox_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ = false;
  std::thread thread_;

  absl::Mutex respond_mu_;
  std::vector<AppliedGroup> to_respond_ ABSL_GUARDED_BY(respond_mu_);
  bool respond_stopping_ ABSL_GUARDED_BY(respond_mu_) = false;
  std::thread responder_;
};

}  // namespace leasehold::server
