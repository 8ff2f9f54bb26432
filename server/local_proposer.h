// Single-node proposals with group commit: proposals that arrive while one batch is being synced
// wait together and share the next fsync. Entries are written to the log (synced) before they are
// applied, so readers only ever see durable state and a crash replays the unapplied tail. Results
// are handed to a responder thread, so sending answers (gRPC may write to the socket inline) never
// holds up the next group.
#pragma once

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/proposer.h"
#include "storage/engine.h"
#include "storage/state_machine.h"

namespace leasehold::server {

class LocalProposer : public Proposer {
 public:
  // Called with each group's watch events once they are flushed, and the store revision after the
  // group: on the responder thread, in log order, before the group's proposers are answered.
  using ApplyObserver = std::function<void(const std::vector<mvccpb::Event>& events, int64_t revision)>;

  // Neither pointer is owned; both must outlive this object.
  LocalProposer(storage::Engine* engine, storage::StateMachine* state_machine, ApplyObserver observer = nullptr)
      : engine_(engine), state_machine_(state_machine), observer_(std::move(observer)) {}
  ~LocalProposer() override { Stop(); }

  // Applies any logged but unapplied entries (a crash between sync and apply), bumps the persisted
  // term, and starts the apply thread.
  absl::Status Start();
  // Fails queued proposals with "server stopped" and joins the apply thread. Idempotent.
  void Stop();

  void Propose(internalpb::InternalRequest entry, Done done) override;
  uint64_t committed_index() const override;
  uint64_t applied_index() const override { return state_machine_->applied_index(); }
  uint64_t term() const override { return term_; }

 private:
  struct Pending {
    internalpb::InternalRequest entry;
    Done done;
  };
  void Run();
  void Respond();

  storage::Engine* const engine_;
  storage::StateMachine* const state_machine_;
  const ApplyObserver observer_;
  uint64_t term_ = 0;
  mutable absl::Mutex mu_;
  std::vector<Pending> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t last_index_ ABSL_GUARDED_BY(mu_) = 0;  // owned by the apply thread once started
  std::thread thread_;

  struct Completion {
    Done done;
    storage::ApplyResult result;
  };
  // One applied and flushed group, waiting to be published and answered.
  struct AppliedGroup {
    std::vector<mvccpb::Event> events;
    int64_t revision = 0;
    std::vector<Completion> completions;
  };
  absl::Mutex respond_mu_;
  std::vector<AppliedGroup> to_respond_ ABSL_GUARDED_BY(respond_mu_);
  bool respond_stopping_ ABSL_GUARDED_BY(respond_mu_) = false;
  std::thread responder_;
};

}  // namespace leasehold::server
