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
#include "tests/faults/safety_checkers.h"
#include "tests/faults/workloads.h"

namespace leasehold::faults {

struct BlobRecord {
  std::mutex mu;
  std::vector<BlobHolding> holdings;
  std::vector<BlobWrite> writes;
};

class BlobLeaseWorkload {
 public:
  BlobLeaseWorkload(std::vector<std::string> endpoints, int workers, uint64_t seed,
                    const CampaignClock* clock, Recorder* recorder, BlobRecord* record);
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

}  // namespace leasehold::faults
