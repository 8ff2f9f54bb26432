// LeaseCheckpointer: makes a renewed lease deadline replicated before the leader acknowledges it,
// when the deadline already in the log (plus the allowance a new leader adds) does not cover it.
// This is what keeps a lease from being revoked early across a leader change: a new leader honours
// every replicated deadline, so every acknowledged one must be replicated (or covered).
//
// Requests are batched: while one checkpoint entry is being committed, new requests gather for the
// next, so a burst of renewals costs one entry and one fsync per round.
//
// Thread-safe. Callbacks run on the responder thread (or the caller's, on failure to propose).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/member/member.h"

namespace leasehold::server {

class LeaseCheckpointer {
 public:
  // `done` gets OK once a checkpoint carrying at least `deadline_ms` for `id` is applied and the
  // lease still exists; NotFound if the lease was revoked meanwhile; the proposal's error (no
  // leader, timed out) if the entry was not applied.
  using Done = std::function<void(absl::Status)>;

  explicit LeaseCheckpointer(Member* member) : member_(member) {}

  void Request(int64_t id, int64_t deadline_ms, Done done);

 private:
  struct Pending {
    int64_t deadline_ms = 0;
    std::vector<Done> waiters;
  };
  // Proposes one round's checkpoint entry (the caller set in_flight_).
  void Propose(std::map<int64_t, Pending> batch);
  void OnApplied(std::map<int64_t, Pending> batch, const absl::Status& status);
  // Starts the next round if requests gathered meanwhile; otherwise clears in_flight_.
  void ProposeNext();

  Member* const member_;
  absl::Mutex mu_;
  std::map<int64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  bool in_flight_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace leasehold::server
