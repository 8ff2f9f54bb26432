// For tests of what sits above the log: a Proposer that records each proposal and holds its
// completion until the test releases it (the indexes are whatever the test sets, and it leads in
// term 3 throughout; thread-safe), and a fixture with a Member on a real state machine proposing
// through it.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "server/member/member.h"
#include "server/member/proposer.h"
#include "storage/reopen.h"
#include "storage/temp_dir.h"

namespace leasehold::server {

class TestProposer : public Proposer {
 public:
  static constexpr uint64_t kTerm = 3;

  void Propose(internalpb::InternalRequest entry, Done done, Abandoned) override {
    absl::MutexLock lock(&mu_);
    proposed_.push_back(std::move(entry));
    waiting_.push_back(std::move(done));
  }
  void ReadBarrier(std::function<void(absl::Status)> done) override { done(absl::OkStatus()); }
  void ProposeConfChange(raftpb::ConfChange, std::function<void(absl::Status)> done) override {
    done(absl::OkStatus());
  }
  void TransferLeadership(uint64_t, std::function<void(absl::Status)> done) override {
    done(absl::OkStatus());
  }
  uint64_t committed_index() const override { return committed; }
  uint64_t applied_index() const override { return applied; }
  uint64_t term() const override { return kTerm; }
  uint64_t leader_id() const override { return 1; }
  bool lease_valid() const override { return true; }
  uint64_t leading_term() const override { return kTerm; }
  int64_t pending_proposals() const override { return 0; }

  // Waits (up to 10 s) until `count` proposals have been made; false if they never came.
  bool AwaitProposals(size_t count) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]()
                      ABSL_SHARED_LOCKS_REQUIRED(mu_) { return proposed_.size() >= count; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
  std::vector<internalpb::InternalRequest> Proposed() {
    absl::MutexLock lock(&mu_);
    return proposed_;
  }
  // Answers the oldest proposal not yet answered with `result`.
  void CompleteOldest(storage::ApplyResult result = {}) {
    Done done;
    {
      absl::MutexLock lock(&mu_);
      done = std::move(waiting_.front());
      waiting_.erase(waiting_.begin());
    }
    done(std::move(result));
  }

  std::atomic<uint64_t> committed{0};
  std::atomic<uint64_t> applied{0};

 private:
  absl::Mutex mu_;
  std::vector<internalpb::InternalRequest> proposed_ ABSL_GUARDED_BY(mu_);
  std::vector<Done> waiting_ ABSL_GUARDED_BY(mu_);
};

// Member "m1" (id 1) over a state machine in a temporary directory, proposing through proposer_
// (a TestProposer, or the test's own kind).
template <typename ProposerType>
class MemberFixtureWith : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(OpenMember({})); }
  void OpenMember(std::vector<std::string> client_urls) {
    ASSERT_NO_FATAL_FAILURE(testing::ReopenStateMachine(dir_.Sub("db"), &engine_, &sm_));
    MemberConfig config;
    config.member_id = 1;
    config.name = "m1";
    config.client_urls = std::move(client_urls);
    member_ =
        std::make_unique<Member>(config, engine_.get(), sm_.get(), &proposer_, nullptr, &tokens_);
  }

  testing::TempDir dir_;
  std::unique_ptr<storage::Engine> engine_;
  std::unique_ptr<storage::StateMachine> sm_;
  ProposerType proposer_;
  TokenStore tokens_{absl::Seconds(60)};
  std::unique_ptr<Member> member_;
};

using MemberFixture = MemberFixtureWith<TestProposer>;

}  // namespace leasehold::server
