// The Azure blob lease workload: clients contend for a lease on one blob through members' blob
// adapters (the storage emulator's REST API, SharedKey-signed as the SDKs sign), write the blob
// under their lease, renew, release or abandon it, and now and then stall past the lease's
// duration and write again with their old lease id. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/faults/history.h"
#include "tests/faults/workloads.h"

namespace leasehold::faults {

// A stretch of time during which a client believed it held a blob lease: from the acquire's
// acknowledgement to the earliest of (last acknowledged acquire/renew's send + duration, the
// release's send, a refusal telling it the lease was gone).
struct BlobHolding {
  int client = 0;
  std::string lease_id;
  int64_t acquired_ns = 0;  // acknowledgement of the acquire
  int64_t believed_until_ns = 0;
};

struct BlobWrite {
  int client = 0;
  std::string lease_id;
  int64_t call_ns = 0;
  int64_t return_ns = 0;
  int status = 0;  // HTTP status; 0: no answer
  bool stale = false;  // sent after the client's own lease had run out
};

struct BlobRecord {
  std::mutex mu;
  std::vector<BlobHolding> holdings;
  std::vector<BlobWrite> writes;
};

class BlobLeaseWorkload {
 public:
  BlobLeaseWorkload(std::vector<std::string> endpoints, int workers, uint64_t seed, const CampaignClock* clock,
                    Recorder* recorder, BlobRecord* record);
  ~BlobLeaseWorkload();
  void Start();
  void Stop();

 private:
  void Worker(int worker);

  std::vector<std::string> endpoints_;
  int workers_;
  uint64_t seed_;
  const CampaignClock* clock_;
  Recorder* recorder_;
  BlobRecord* record_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

struct BlobCheck {
  std::vector<std::string> anomalies;
  int64_t holdings = 0;
  int64_t writes_accepted = 0;
  int64_t stale_refused = 0;
};

// - No two clients' holdings overlap.
// - No write with a lease id is accepted once another client's acquire was acknowledged after that
//   lease's own acquire (a stale lease id is refused).
BlobCheck CheckBlobLeases(const BlobRecord& record);

}  // namespace leasehold::faults
