// Azure Blob semantics on the blob table: conditional headers, the lease state machine of Lease
// Blob and Lease Container (five states, the outcome tables of the Lease Blob reference), and the
// lease checks of reads and writes. Deterministic: time comes in as `now_ms` (the entry's time when
// applying), ids come inside the request.
//
// A fixed-duration lease or a break period is timed by a core lease of the LeaseCollection, so the
// leader's expiry loop ends it through the log; until that revoke is applied, every answer already
// treats a lease past its deadline as expired (or broken), so the outcome does not depend on how
// soon the revoke lands.
#pragma once

#include <cstdint>
#include <string>

#include "leasehold/internal.pb.h"
#include "rocksdb/write_batch.h"
#include "storage/blob/blob_table.h"

namespace leasehold::storage {

// Starts and stops the core leases that time blob leases; implemented by the state machine.
class CoreLeaseTimer {
 public:
  virtual ~CoreLeaseTimer() = default;
  // Starts a core lease ending at `deadline_ms` under `preferred_id`, or the next free id after it;
  // returns the id used.
  virtual int64_t Start(int64_t preferred_id, int64_t now_ms, int64_t deadline_ms) = 0;
  // Ends a core lease without any effect on the blob table (unknown ids are ignored).
  virtual void Stop(int64_t id) = 0;
};

// The quoted entity tag of a revision, as sent in ETag and compared with If-Match.
std::string BlobETag(int64_t revision);

// The lease as it stands at `now_ms`: a fixed lease past its deadline is expired, a break past its
// end is broken.
internalpb::BlobLease EffectiveLease(const internalpb::BlobLease& lease, int64_t now_ms);

// Applies a mutation (CREATE_CONTAINER .. SET_BLOB_TAGS). Set Blob Tags is checked against the
// lease as a write but changes neither the ETag nor the last-modified time; x-ms-if-tags applies to
// blobs only, and only when the blob exists.
internalpb::BlobResponse ApplyBlobRequest(const internalpb::BlobRequest& request, int64_t now_ms,
                                          BlobTable* table, CoreLeaseTimer* timer,
                                          rocksdb::WriteBatch* batch);

// Answers a read (GET_CONTAINER_PROPERTIES, GET_BLOB, GET_BLOB_PROPERTIES, GET_BLOB_TAGS); the
// record in the response carries the effective lease, and only GET_BLOB carries the content.
internalpb::BlobResponse ReadBlobRequest(const internalpb::BlobRequest& request, int64_t now_ms,
                                         const BlobTable& table);

// The core lease `core_lease_id` was revoked by the expiry loop: the lease it timed is now expired
// (fixed lease) or broken (break period). Returns false when no record owns that core lease.
bool EndCoreLease(int64_t core_lease_id, BlobTable* table, rocksdb::WriteBatch* batch);

}  // namespace leasehold::storage
