#include "storage/blob/blob_ops.h"

#include <algorithm>
#include <cstdio>

#include "storage/blob/blob_tags.h"

namespace leasehold::storage {
namespace {

using internalpb::BlobLease;
using internalpb::BlobRecord;
using internalpb::BlobRequest;
using internalpb::BlobResponse;

BlobResponse Fail(int status, std::string code, std::string message) {
  BlobResponse response;
  response.set_http_status(status);
  response.set_error_code(std::move(code));
  response.set_error_message(std::move(message));
  return response;
}

BlobResponse Ok(int status) {
  BlobResponse response;
  response.set_http_status(status);
  response.set_lease_time_s(-1);
  return response;
}

BlobResponse ContainerNotFound() {
  return Fail(404, "ContainerNotFound", "The specified container does not exist.");
}
BlobResponse BlobNotFound() {
  return Fail(404, "BlobNotFound", "The specified blob does not exist.");
}
BlobResponse ConditionNotMet() {
  return Fail(412, "ConditionNotMet",
              "The condition specified using HTTP conditional header(s) is not met.");
}

// --- Conditional headers
// --------------------------------------------------------------------------

// A resource's condition outcome: met, or failed (reads answer a failed If-None-Match or
// If-Modified-Since with 304, everything else with 412).
enum class Condition { kMet, kNotModified, kFailed };

Condition EvaluateConditions(const internalpb::BlobConditions& c, const BlobRecord* record) {
  if (record == nullptr) {
    // Nothing exists: no tag can match; "none of these tags" holds.
    return c.if_match_size() > 0 ? Condition::kFailed : Condition::kMet;
  }
  const std::string etag = BlobETag(record->etag_revision());
  const int64_t modified_s = record->last_modified_ms() / 1000;
  auto matches = [&](const auto& tags) {
    return std::any_of(tags.begin(), tags.end(),
                       [&](const std::string& t) { return t == "*" || t == etag; });
  };
  if (c.if_match_size() > 0 && !matches(c.if_match())) return Condition::kFailed;
  if (c.if_unmodified_since_s() != 0 && modified_s > c.if_unmodified_since_s())
    return Condition::kFailed;
  if (c.if_none_match_size() > 0 && matches(c.if_none_match())) return Condition::kNotModified;
  if (c.if_modified_since_s() != 0 && modified_s <= c.if_modified_since_s())
    return Condition::kNotModified;
  return Condition::kMet;
}

// Writes and lease operations fail every unmet condition with 412, except Put Blob over an existing
// blob with If-None-Match: * ("create only"), which is 409 BlobAlreadyExists.
std::optional<BlobResponse> CheckWriteConditions(const BlobRequest& request,
                                                 const BlobRecord* record) {
  if (EvaluateConditions(request.conditions(), record) == Condition::kMet) return std::nullopt;
  const auto& none = request.conditions().if_none_match();
  if (record != nullptr && request.op() == BlobRequest::PUT_BLOB &&
      std::find(none.begin(), none.end(), "*") != none.end()) {
    return Fail(409, "BlobAlreadyExists", "The specified blob already exists.");
  }
  return ConditionNotMet();
}

// x-ms-if-tags, on blobs only (the service ignores it on containers). The adapter refused a
// malformed expression before proposing, so one that does not parse here is simply not met.
bool TagsConditionMet(const BlobRequest& request, const BlobRecord& blob) {
  if (request.conditions().if_tags().empty()) return true;
  const std::optional<TagCondition> condition = TagCondition::Parse(request.conditions().if_tags());
  return condition.has_value() && condition->Matches(blob.tags());
}

// --- Lease checks of reads and writes (the first outcome table) ----------------------------------

struct Names {
  const char* mismatch;     // LeaseIdMismatchWith{Blob,Container}Operation
  const char* not_present;  // LeaseNotPresentWith{Blob,Container}Operation
  const char* what;         // "blob" or "container"
};
const Names kBlobNames{"LeaseIdMismatchWithBlobOperation", "LeaseNotPresentWithBlobOperation",
                       "blob"};
const Names kContainerNames{"LeaseIdMismatchWithContainerOperation",
                            "LeaseNotPresentWithContainerOperation", "container"};

bool Locked(const BlobLease& lease) {
  return lease.state() == BlobLease::LEASED || lease.state() == BlobLease::BREAKING;
}

// 412 in every state: the Lease Blob page's table gives 409 for another id on a leased blob, but
// the service answers 412 (a live recording of the Azure SDK's own tests: HEAD with another lease
// id on a leased blob, x-ms-version 2021-12-02), as its error-code table lists this code.
BlobResponse Mismatch(const Names& names) {
  return Fail(
      412, names.mismatch,
      std::string("The lease ID specified did not match the lease ID for the ") + names.what + ".");
}
// A lease id given where no lease holds: the service's LeaseLost when the lease it named has
// expired (its id is still remembered), else LeaseNotPresentWith{Blob,Container}Operation.
BlobResponse NotPresent(const Names& names, BlobLease::State state) {
  if (state == BlobLease::EXPIRED) {
    return Fail(412, "LeaseLost",
                std::string("A lease ID was specified, but the lease for the ") + names.what +
                    " has expired.");
  }
  return Fail(412, names.not_present,
              std::string("There is currently no lease on the ") + names.what + ".");
}
BlobResponse LeaseIdMissing(const Names& names) {
  return Fail(412, "LeaseIdMissing",
              std::string("There is currently a lease on the ") + names.what +
                  " and no lease ID was specified in the request.");
}

// Checks a write (or delete) against the lease. On success, a write without a lease id ends an
// expired or broken lease: its id is forgotten, so it can no longer be renewed.
std::optional<BlobResponse> CheckWrite(const std::string& lease_id, BlobLease* lease,
                                       const Names& names) {
  if (Locked(*lease)) {
    if (lease_id.empty()) return LeaseIdMissing(names);
    if (lease_id != lease->id()) return Mismatch(names);
    return std::nullopt;
  }
  if (!lease_id.empty()) return NotPresent(names, lease->state());
  lease->set_state(BlobLease::AVAILABLE);
  lease->clear_id();
  lease->clear_duration_s();
  lease->clear_deadline_ms();
  return std::nullopt;
}

std::optional<BlobResponse> CheckRead(const std::string& lease_id, const BlobLease& lease,
                                      const Names& names) {
  if (lease_id.empty()) return std::nullopt;
  if (!Locked(lease)) return NotPresent(names, lease.state());
  if (lease_id != lease.id()) return Mismatch(names);
  return std::nullopt;
}

// x-leasehold-if-fencing-token on a write: refused once a newer token was issued for the blob.
std::optional<BlobResponse> CheckFencingToken(const BlobRequest& request, const BlobLease& lease) {
  if (request.if_fencing_token() == 0 || request.if_fencing_token() >= lease.fencing_token())
    return std::nullopt;
  return Fail(412, "FencingTokenSuperseded",
              "The fencing token is older than the latest one issued for this blob (" +
                  std::to_string(lease.fencing_token()) + ").");
}

// --- Lease operations (the second outcome table) -------------------------------------------------

BlobResponse LeaseConflict(std::string code, std::string message) {
  return Fail(409, std::move(code), std::move(message));
}
BlobResponse LeaseAlreadyPresent() {
  return LeaseConflict("LeaseAlreadyPresent", "There is already a lease present.");
}
BlobResponse LeaseNotPresent() {
  return LeaseConflict("LeaseNotPresentWithLeaseOperation",
                       "There is currently no lease on the container or blob.");
}
BlobResponse LeaseMismatch() {
  return LeaseConflict(
      "LeaseIdMismatchWithLeaseOperation",
      "The lease ID specified did not match the lease ID for the container or blob.");
}
BlobResponse BreakingCannotBeAcquired() {
  return LeaseConflict("LeaseIsBreakingAndCannotBeAcquired",
                       "There is already a breaking lease present which cannot be acquired.");
}
BlobResponse BreakingCannotBeChanged() {
  return LeaseConflict(
      "LeaseIsBreakingAndCannotBeChanged",
      "The lease ID matched, but the lease is currently in breaking state and cannot be changed.");
}
BlobResponse BrokenCannotBeRenewed() {
  return LeaseConflict(
      "LeaseIsBrokenAndCannotBeRenewed",
      "The lease ID matched, but the lease has been broken explicitly and cannot be renewed.");
}

// Moves `lease` to a state timed by a core lease ending at `deadline_ms` (0: untimed).
void Retime(BlobLease* lease, int64_t deadline_ms, const BlobRequest& request, int64_t now_ms,
            CoreLeaseTimer* timer) {
  if (lease->core_lease_id() != 0) timer->Stop(lease->core_lease_id());
  lease->clear_core_lease_id();
  lease->set_deadline_ms(deadline_ms);
  if (deadline_ms != 0)
    lease->set_core_lease_id(timer->Start(request.core_lease_id(), now_ms, deadline_ms));
}

void Grant(BlobLease* lease, const std::string& id, int64_t duration_s, const BlobRequest& request,
           int64_t now_ms, CoreLeaseTimer* timer) {
  lease->set_state(BlobLease::LEASED);
  lease->set_id(id);
  lease->set_duration_s(duration_s);
  Retime(lease, duration_s < 0 ? 0 : now_ms + duration_s * 1000, request, now_ms, timer);
}

int64_t RoundSeconds(int64_t ms) { return ms <= 0 ? 0 : (ms + 500) / 1000; }

// Runs one lease action on `lease` (already effective at `now_ms`). On success fills the lease
// fields of the response; the caller stores the record.
BlobResponse RunLeaseAction(const BlobRequest& request, int64_t now_ms, BlobLease* lease,
                            CoreLeaseTimer* timer, BlobTable* table, rocksdb::WriteBatch* batch) {
  const std::string& id = request.lease_id();
  const BlobLease::State state = lease->state();
  switch (request.action()) {
    case BlobRequest::ACQUIRE: {
      const std::string& wanted = request.proposed_lease_id().empty() ? request.generated_lease_id()
                                                                      : request.proposed_lease_id();
      const bool same_id = !request.proposed_lease_id().empty() && wanted == lease->id();
      if (state == BlobLease::BREAKING)
        return same_id ? BreakingCannotBeAcquired() : LeaseAlreadyPresent();
      if (state == BlobLease::LEASED && !same_id) return LeaseAlreadyPresent();
      Grant(lease, wanted, request.duration_s(), request, now_ms, timer);
      lease->set_fencing_token(table->NextRevision(batch));
      BlobResponse response = Ok(201);
      response.set_lease_id(wanted);
      response.set_fencing_token(lease->fencing_token());
      return response;
    }
    case BlobRequest::RENEW: {
      // Since 2012-02-12 a released lease cannot be renewed: its id no longer matches.
      if (state == BlobLease::AVAILABLE || id != lease->id()) return LeaseMismatch();
      if (state == BlobLease::BREAKING || state == BlobLease::BROKEN)
        return BrokenCannotBeRenewed();
      // Leased, or expired with the blob unmodified since (a write would have cleared the id).
      Grant(lease, id, lease->duration_s(), request, now_ms, timer);
      BlobResponse response = Ok(200);
      response.set_lease_id(id);
      return response;
    }
    case BlobRequest::CHANGE: {
      const std::string& proposed = request.proposed_lease_id();
      if (state == BlobLease::BREAKING)
        return id == lease->id() ? BreakingCannotBeChanged() : LeaseMismatch();
      if (state != BlobLease::LEASED) return LeaseNotPresent();
      // Changing to the id already held is a repeat of a change that succeeded.
      if (id != lease->id() && proposed != lease->id()) return LeaseMismatch();
      lease->set_id(proposed);
      lease->set_fencing_token(table->NextRevision(batch));
      BlobResponse response = Ok(200);
      response.set_lease_id(proposed);
      response.set_fencing_token(lease->fencing_token());
      return response;
    }
    case BlobRequest::RELEASE: {
      if (state == BlobLease::AVAILABLE || id != lease->id()) return LeaseMismatch();
      Retime(lease, 0, request, now_ms, timer);
      lease->set_state(BlobLease::AVAILABLE);
      lease->clear_id();
      lease->clear_duration_s();
      return Ok(200);
    }
    case BlobRequest::BREAK: {
      if (state == BlobLease::AVAILABLE) return LeaseNotPresent();
      int64_t break_ms = 0;  // expired and broken leases break at once
      if (state == BlobLease::LEASED) {
        const int64_t remaining = lease->duration_s() < 0 ? 0 : lease->deadline_ms() - now_ms;
        break_ms =
            request.has_break_period()
                ? (lease->duration_s() < 0 ? request.break_period_s() * 1000
                                           : std::min(request.break_period_s() * 1000, remaining))
                : remaining;
      } else if (state == BlobLease::BREAKING) {
        const int64_t remaining = lease->deadline_ms() - now_ms;
        break_ms = request.has_break_period() ? std::min(request.break_period_s() * 1000, remaining)
                                              : remaining;
      }
      break_ms = std::max<int64_t>(break_ms, 0);
      if (break_ms == 0) {
        Retime(lease, 0, request, now_ms, timer);
        lease->set_state(BlobLease::BROKEN);
      } else if (state != BlobLease::BREAKING || now_ms + break_ms != lease->deadline_ms()) {
        Retime(lease, now_ms + break_ms, request, now_ms, timer);
        lease->set_state(BlobLease::BREAKING);
      }
      BlobResponse response = Ok(202);
      response.set_lease_time_s(RoundSeconds(break_ms));
      return response;
    }
    case BlobRequest::ACTION_UNSPECIFIED:
    default:
      return Fail(400, "InvalidHeaderValue",
                  "The value for one of the HTTP headers is not in the correct format.");
  }
}

// A lease that is neither leased nor breaking needs no timer: stop any left from before (an expired
// lease whose revoke has not been applied yet).
void SettleTimer(BlobLease* lease, CoreLeaseTimer* timer) {
  if (Locked(*lease) || lease->core_lease_id() == 0) return;
  timer->Stop(lease->core_lease_id());
  lease->clear_core_lease_id();
  lease->clear_deadline_ms();
}

void FillStamp(const BlobRecord& record, BlobResponse* response) {
  response->set_etag_revision(record.etag_revision());
  response->set_last_modified_ms(record.last_modified_ms());
}

// Container names never contain '/', and blob names are never empty: both checked by the adapter.
BlobResponse ApplyContainerRequest(const BlobRequest& request, int64_t now_ms, BlobTable* table,
                                   CoreLeaseTimer* timer, rocksdb::WriteBatch* batch) {
  const BlobKey key{request.container(), ""};
  const BlobRecord* existing = table->Find(key);
  if (request.op() == BlobRequest::CREATE_CONTAINER) {
    if (existing != nullptr)
      return Fail(409, "ContainerAlreadyExists", "The specified container already exists.");
    BlobRecord record;
    record.set_created_ms(now_ms);
    record.set_last_modified_ms(now_ms);
    record.set_etag_revision(table->NextRevision(batch));
    *record.mutable_metadata() = request.metadata();
    record.set_public_access(request.public_access());
    BlobResponse response = Ok(201);
    FillStamp(record, &response);
    table->Put(key, std::move(record), batch);
    return response;
  }
  if (existing == nullptr) return ContainerNotFound();
  if (auto refused = CheckWriteConditions(request, existing)) return *refused;
  BlobRecord record = *existing;
  *record.mutable_lease() = EffectiveLease(record.lease(), now_ms);
  if (request.op() == BlobRequest::DELETE_CONTAINER) {
    // A delete is a write: the same lease checks (what CheckWrite resets goes with the container).
    if (auto refused = CheckWrite(request.lease_id(), record.mutable_lease(), kContainerNames))
      return *refused;
    const BlobLease& lease = record.lease();
    if (lease.core_lease_id() != 0) timer->Stop(lease.core_lease_id());
    // Blobs' own leases end with them.
    table->ForEachBlob(key.container, "", [&](std::string_view, const BlobRecord& blob) {
      if (blob.lease().core_lease_id() != 0) timer->Stop(blob.lease().core_lease_id());
      return true;
    });
    table->Erase(key, batch);
    return Ok(202);
  }
  // LEASE_CONTAINER
  BlobResponse response =
      RunLeaseAction(request, now_ms, record.mutable_lease(), timer, table, batch);
  if (response.error_code().empty()) {
    SettleTimer(record.mutable_lease(), timer);
    FillStamp(record, &response);
    table->Put(key, std::move(record), batch);
  }
  return response;
}

BlobResponse ApplyBlobOnlyRequest(const BlobRequest& request, int64_t now_ms, BlobTable* table,
                                  CoreLeaseTimer* timer, rocksdb::WriteBatch* batch) {
  if (table->Find(BlobKey{request.container(), ""}) == nullptr) return ContainerNotFound();
  const BlobKey key{request.container(), request.blob()};
  const BlobRecord* existing = table->Find(key);
  if (existing == nullptr && request.op() != BlobRequest::PUT_BLOB) return BlobNotFound();
  if (auto refused = CheckWriteConditions(request, existing)) return *refused;
  if (existing != nullptr && !TagsConditionMet(request, *existing)) return ConditionNotMet();
  BlobRecord record;
  if (existing != nullptr) {
    record = *existing;
    *record.mutable_lease() = EffectiveLease(record.lease(), now_ms);
  }
  BlobLease& lease = *record.mutable_lease();

  if (request.op() == BlobRequest::LEASE_BLOB) {
    BlobResponse response = RunLeaseAction(request, now_ms, &lease, timer, table, batch);
    if (response.error_code().empty()) {
      SettleTimer(&lease, timer);
      FillStamp(record, &response);
      table->Put(key, std::move(record), batch);
    }
    return response;
  }

  if (request.op() == BlobRequest::SET_BLOB_TAGS) {
    // Checked as a write, but tags are not the blob's data: an expired or broken lease keeps its id
    // (it may still be renewed), and the ETag and last-modified time stay.
    BlobLease checked = lease;
    if (auto refused = CheckWrite(request.lease_id(), &checked, kBlobNames)) return *refused;
    if (auto refused = CheckFencingToken(request, lease)) return *refused;
    SettleTimer(&lease, timer);
    *record.mutable_tags() = request.tags();
    table->Put(key, std::move(record), batch);
    return Ok(204);
  }

  // Writes: Put Blob, Set Blob Properties, Set Blob Metadata, Delete Blob.
  if (existing == nullptr) {
    if (!request.lease_id().empty()) return NotPresent(kBlobNames, BlobLease::AVAILABLE);
  } else if (auto refused = CheckWrite(request.lease_id(), &lease, kBlobNames)) {
    return *refused;
  }
  if (auto refused = CheckFencingToken(request, lease)) return *refused;
  if (request.op() == BlobRequest::DELETE_BLOB) {
    if (lease.core_lease_id() != 0) timer->Stop(lease.core_lease_id());
    table->Erase(key, batch);
    return Ok(202);
  }
  SettleTimer(&lease, timer);
  if (existing == nullptr) record.set_created_ms(now_ms);
  if (request.op() == BlobRequest::PUT_BLOB) {
    record.set_content_length(static_cast<int64_t>(request.content().size()));
    *record.mutable_tags() = request.tags();  // replaced, as the rest of the blob
  }
  if (request.op() != BlobRequest::SET_BLOB_METADATA)
    *record.mutable_properties() = request.properties();
  if (request.op() != BlobRequest::SET_BLOB_PROPERTIES)
    *record.mutable_metadata() = request.metadata();
  record.set_last_modified_ms(now_ms);
  record.set_etag_revision(table->NextRevision(batch));
  BlobResponse response = Ok(request.op() == BlobRequest::PUT_BLOB ? 201 : 200);
  FillStamp(record, &response);
  table->Put(key, std::move(record), batch);
  if (request.op() == BlobRequest::PUT_BLOB) table->PutContent(key, request.content(), batch);
  return response;
}

}  // namespace

std::string BlobETag(int64_t revision) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "\"0x8D%013llX\"", static_cast<unsigned long long>(revision));
  return buf;
}

BlobLease EffectiveLease(const BlobLease& lease, int64_t now_ms) {
  BlobLease effective = lease;
  const bool timed_out = lease.deadline_ms() != 0 && now_ms >= lease.deadline_ms();
  if (timed_out && lease.state() == BlobLease::LEASED) {
    effective.set_state(BlobLease::EXPIRED);
  } else if (timed_out && lease.state() == BlobLease::BREAKING) {
    effective.set_state(BlobLease::BROKEN);
  } else {
    return effective;
  }
  effective.clear_deadline_ms();  // the core lease is stale: its revoke is on its way or applied
  return effective;
}

internalpb::BlobResponse ApplyBlobRequest(const BlobRequest& request, int64_t now_ms,
                                          BlobTable* table, CoreLeaseTimer* timer,
                                          rocksdb::WriteBatch* batch) {
  switch (request.op()) {
    case BlobRequest::CREATE_CONTAINER:
    case BlobRequest::DELETE_CONTAINER:
    case BlobRequest::LEASE_CONTAINER:
      return ApplyContainerRequest(request, now_ms, table, timer, batch);
    case BlobRequest::PUT_BLOB:
    case BlobRequest::DELETE_BLOB:
    case BlobRequest::SET_BLOB_METADATA:
    case BlobRequest::SET_BLOB_PROPERTIES:
    case BlobRequest::LEASE_BLOB:
    case BlobRequest::SET_BLOB_TAGS:
      return ApplyBlobOnlyRequest(request, now_ms, table, timer, batch);
    default:
      return Fail(400, "UnsupportedHttpVerb", "The operation is not a replicated blob operation.");
  }
}

internalpb::BlobResponse ReadBlobRequest(const BlobRequest& request, int64_t now_ms,
                                         const BlobTable& table) {
  const BlobRecord* container = table.Find(BlobKey{request.container(), ""});
  if (container == nullptr) return ContainerNotFound();
  const bool is_container = request.op() == BlobRequest::GET_CONTAINER_PROPERTIES;
  const BlobRecord* record =
      is_container ? container : table.Find(BlobKey{request.container(), request.blob()});
  if (record == nullptr) return BlobNotFound();
  const auto& none = request.conditions().if_none_match();
  if (std::find(none.begin(), none.end(), "*") != none.end()) {
    return Fail(400, "UnsatisfiableCondition",
                "The request includes an unsatisfiable condition for this operation.");
  }
  switch (EvaluateConditions(request.conditions(), record)) {
    case Condition::kFailed:
      return ConditionNotMet();
    case Condition::kNotModified: {
      BlobResponse response =
          Fail(304, "ConditionNotMet",
               "The condition specified using HTTP conditional header(s) is not met.");
      FillStamp(*record, &response);
      return response;
    }
    case Condition::kMet:
      break;
  }
  if (!is_container && !TagsConditionMet(request, *record)) return ConditionNotMet();
  const BlobLease lease = EffectiveLease(record->lease(), now_ms);
  if (auto refused =
          CheckRead(request.lease_id(), lease, is_container ? kContainerNames : kBlobNames))
    return *refused;
  BlobResponse response = Ok(200);
  FillStamp(*record, &response);
  BlobRecord* out = response.mutable_record();
  *out = *record;
  *out->mutable_lease() = lease;
  if (request.op() == BlobRequest::GET_BLOB)
    response.set_content(table.Content(BlobKey{request.container(), request.blob()}));
  return response;
}

bool EndCoreLease(int64_t core_lease_id, BlobTable* table, rocksdb::WriteBatch* batch) {
  auto owner = table->OwnerOfCoreLease(core_lease_id);
  if (!owner) return false;
  BlobRecord record = *table->Find(*owner);
  BlobLease* lease = record.mutable_lease();
  if (lease->state() == BlobLease::LEASED) lease->set_state(BlobLease::EXPIRED);
  if (lease->state() == BlobLease::BREAKING) lease->set_state(BlobLease::BROKEN);
  lease->clear_core_lease_id();
  lease->clear_deadline_ms();
  table->Put(*owner, std::move(record), batch);
  return true;
}

}  // namespace leasehold::storage
