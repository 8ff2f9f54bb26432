// What the state machine reports of its work as it does it, for etcd's mvcc and lease metrics
// (the server counts; storage knows nothing of metrics). Calls come on the thread doing the work,
// with the state machine's lock held: an implementation only counts, and may read the clock (the
// state machine itself never does).
#pragma once

#include <cstddef>
#include <cstdint>

namespace leasehold::storage {

class ApplyObserver {
 public:
  virtual ~ApplyObserver() = default;
  // etcd counts operations as its mvcc layer sees them: each put, each delete-range (a lease's
  // revocation deletes its keys one by one), each range (a read included), and a transaction when
  // one request ran more than one of them.
  virtual void Put(size_t key_and_value_bytes) {}
  virtual void DeleteRange() {}
  virtual void Range() {}
  virtual void Txn() {}
  virtual void LeaseGranted(int64_t ttl_seconds) {}
  virtual void LeaseRevoked() {}
  // A compaction is applied; `versions_deleted` old versions went with it.
  virtual void CompactionStarted() {}
  virtual void CompactionFinished(uint64_t versions_deleted) {}
};

}  // namespace leasehold::storage
