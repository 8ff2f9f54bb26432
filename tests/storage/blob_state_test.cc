// The blob table through the state machine: lease outcomes by state (the Lease Blob reference's
// tables), lease timing by core leases (expiry and the end of a break arrive as core lease
// revokes), fencing tokens, and survival across a reopen.
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "storage/apply/state_machine.h"
#include "storage/reopen.h"
#include "storage/temp_dir.h"

namespace leasehold::storage {
namespace {

using internalpb::BlobLease;
using internalpb::BlobRequest;
using internalpb::BlobResponse;
using ::testing::Contains;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr char kA[] = "aaaaaaaa-0000-4000-8000-000000000001";
constexpr char kB[] = "bbbbbbbb-0000-4000-8000-000000000002";
constexpr char kC[] = "cccccccc-0000-4000-8000-000000000003";
constexpr int64_t kStart = 1'700'000'000'000;

class BlobStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Reopen();
    ASSERT_EQ(Run(Op(BlobRequest::CREATE_CONTAINER, "")).http_status(), 201);
    BlobRequest put = Op(BlobRequest::PUT_BLOB);
    put.set_content("hello");
    ASSERT_EQ(Run(put).http_status(), 201);
  }

  // A fresh container and blob, for the next cell of a table.
  void Recreate() {
    ASSERT_EQ(Run(Op(BlobRequest::DELETE_CONTAINER, "")).http_status(), 202);
    ASSERT_EQ(Run(Op(BlobRequest::CREATE_CONTAINER, "")).http_status(), 201);
    BlobRequest put = Op(BlobRequest::PUT_BLOB);
    put.set_content("hello");
    ASSERT_EQ(Run(put).http_status(), 201);
  }

  void Reopen() {
    ASSERT_NO_FATAL_FAILURE(testing::ReopenStateMachine(dir_.Sub("db"), &engine_, &sm_));
    next_index_ = sm_->applied_index() + 1;
  }

  static BlobRequest Op(BlobRequest::Op op, const std::string& blob = "b") {
    BlobRequest r;
    r.set_op(op);
    r.set_container("c1");
    r.set_blob(blob);
    return r;
  }
  static BlobRequest Lease(BlobRequest::LeaseAction action, const std::string& id = "",
                           const std::string& proposed = "") {
    BlobRequest r = Op(BlobRequest::LEASE_BLOB);
    r.set_action(action);
    r.set_lease_id(id);
    r.set_proposed_lease_id(proposed);
    r.set_generated_lease_id(kC);
    r.set_core_lease_id(77);
    return r;
  }
  static BlobRequest Acquire(const std::string& proposed, int64_t duration) {
    BlobRequest r = Lease(BlobRequest::ACQUIRE, "", proposed);
    r.set_duration_s(duration);
    return r;
  }
  static BlobRequest Break(int64_t period = -1) {
    BlobRequest r = Lease(BlobRequest::BREAK);
    if (period >= 0) {
      r.set_has_break_period(true);
      r.set_break_period_s(period);
    }
    return r;
  }
  static BlobRequest Write(const std::string& lease_id) {
    BlobRequest r = Op(BlobRequest::SET_BLOB_METADATA);
    r.set_lease_id(lease_id);
    return r;
  }
  static BlobRequest Read(const std::string& lease_id) {
    BlobRequest r = Op(BlobRequest::GET_BLOB_PROPERTIES);
    r.set_lease_id(lease_id);
    return r;
  }

  BlobResponse Run(const BlobRequest& request) {
    if (request.op() >= BlobRequest::GET_CONTAINER_PROPERTIES) return sm_->ReadBlob(request, now_);
    internalpb::InternalRequest entry;
    *entry.mutable_blob() = request;
    entry.set_time_unix_ms(now_);
    ApplyResult result = sm_->Apply(next_index_++, entry);
    sm_->FlushApplied();
    EXPECT_TRUE(result.status.ok()) << result.status;
    return result.response.blob();
  }

  // What the leader's expiry loop does once a core lease runs out.
  void RevokeCoreLease(int64_t id) {
    internalpb::InternalRequest entry;
    entry.mutable_lease_revoke()->set_id(id);
    entry.set_time_unix_ms(now_);
    ApplyResult result = sm_->Apply(next_index_++, entry);
    sm_->FlushApplied();
    ASSERT_TRUE(result.status.ok()) << result.status;
  }

  BlobLease::State State() { return Run(Read("")).record().lease().state(); }
  BlobLease StoredLease() {
    BlobLease lease;
    sm_->ReadBlobTable([&](const BlobTable& table) {
      lease = table.Find(BlobKey{"c1", "b"})->lease();
    });
    return lease;
  }

  // Puts the blob's lease in `state` with id kA (a fixed 15 s lease where timing matters).
  void Reach(BlobLease::State state) {
    switch (state) {
      case BlobLease::AVAILABLE:
        return;
      case BlobLease::LEASED:
        ASSERT_EQ(Run(Acquire(kA, 15)).http_status(), 201);
        return;
      case BlobLease::BREAKING:
        ASSERT_EQ(Run(Acquire(kA, 15)).http_status(), 201);
        ASSERT_EQ(Run(Break(10)).http_status(), 202);
        return;
      case BlobLease::BROKEN:
        ASSERT_EQ(Run(Acquire(kA, -1)).http_status(), 201);
        ASSERT_EQ(Run(Break()).http_status(), 202);
        return;
      case BlobLease::EXPIRED:
        ASSERT_EQ(Run(Acquire(kA, 15)).http_status(), 201);
        now_ += 15'000;
        return;
      default:
        FAIL();
    }
  }

  testing::TempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<StateMachine> sm_;
  uint64_t next_index_ = 1;
  int64_t now_ = kStart;
};

// One cell of an outcome table: the state before, the request, the status (and error code) and
// the state after.
struct Cell {
  BlobLease::State before;
  int status;
  std::string code;
  BlobLease::State after;
};

void ExpectCell(BlobStateTest* t, const Cell& cell, const BlobResponse& response,
                BlobLease::State after) {
  EXPECT_EQ(response.http_status(), cell.status)
      << "from state " << cell.before << ": " << response.error_code();
  EXPECT_EQ(response.error_code(), cell.code) << "from state " << cell.before;
  EXPECT_EQ(after, cell.after) << "from state " << cell.before;
}

using S = BlobLease;

#define TABLE_TEST(name, request_expr, ...)                   \
  TEST_F(BlobStateTest, name) {                               \
    for (const Cell& cell : std::vector<Cell>{__VA_ARGS__}) { \
      Recreate();                                             \
      Reach(cell.before);                                     \
      const BlobResponse response = Run(request_expr);        \
      ExpectCell(this, cell, response, State());              \
    }                                                         \
  }

TABLE_TEST(AcquireWithoutProposedId, Acquire("", 15), Cell{S::AVAILABLE, 201, "", S::LEASED},
           Cell{S::LEASED, 409, "LeaseAlreadyPresent", S::LEASED},
           Cell{S::BREAKING, 409, "LeaseAlreadyPresent", S::BREAKING},
           Cell{S::BROKEN, 201, "", S::LEASED}, Cell{S::EXPIRED, 201, "", S::LEASED})
TABLE_TEST(AcquireSameId, Acquire(kA, 30), Cell{S::AVAILABLE, 201, "", S::LEASED},
           Cell{S::LEASED, 201, "", S::LEASED},
           Cell{S::BREAKING, 409, "LeaseIsBreakingAndCannotBeAcquired", S::BREAKING},
           Cell{S::BROKEN, 201, "", S::LEASED}, Cell{S::EXPIRED, 201, "", S::LEASED})
TABLE_TEST(AcquireOtherId, Acquire(kB, 15), Cell{S::AVAILABLE, 201, "", S::LEASED},
           Cell{S::LEASED, 409, "LeaseAlreadyPresent", S::LEASED},
           Cell{S::BREAKING, 409, "LeaseAlreadyPresent", S::BREAKING},
           Cell{S::BROKEN, 201, "", S::LEASED}, Cell{S::EXPIRED, 201, "", S::LEASED})
TABLE_TEST(BreakPeriodZero, Break(0),
           Cell{S::AVAILABLE, 409, "LeaseNotPresentWithLeaseOperation", S::AVAILABLE},
           Cell{S::LEASED, 202, "", S::BROKEN}, Cell{S::BREAKING, 202, "", S::BROKEN},
           Cell{S::BROKEN, 202, "", S::BROKEN}, Cell{S::EXPIRED, 202, "", S::BROKEN})
TABLE_TEST(BreakPeriodPositive, Break(5),
           Cell{S::AVAILABLE, 409, "LeaseNotPresentWithLeaseOperation", S::AVAILABLE},
           Cell{S::LEASED, 202, "", S::BREAKING}, Cell{S::BREAKING, 202, "", S::BREAKING},
           Cell{S::BROKEN, 202, "", S::BROKEN}, Cell{S::EXPIRED, 202, "", S::BROKEN})
TABLE_TEST(ChangeAToB, Lease(BlobRequest::CHANGE, kA, kB),
           Cell{S::AVAILABLE, 409, "LeaseNotPresentWithLeaseOperation", S::AVAILABLE},
           Cell{S::LEASED, 200, "", S::LEASED},
           Cell{S::BREAKING, 409, "LeaseIsBreakingAndCannotBeChanged", S::BREAKING},
           Cell{S::BROKEN, 409, "LeaseNotPresentWithLeaseOperation", S::BROKEN},
           Cell{S::EXPIRED, 409, "LeaseNotPresentWithLeaseOperation", S::EXPIRED})
TABLE_TEST(ChangeBToA, Lease(BlobRequest::CHANGE, kB, kA),
           Cell{S::AVAILABLE, 409, "LeaseNotPresentWithLeaseOperation", S::AVAILABLE},
           Cell{S::LEASED, 200, "", S::LEASED},
           Cell{S::BREAKING, 409, "LeaseIdMismatchWithLeaseOperation", S::BREAKING},
           Cell{S::BROKEN, 409, "LeaseNotPresentWithLeaseOperation", S::BROKEN},
           Cell{S::EXPIRED, 409, "LeaseNotPresentWithLeaseOperation", S::EXPIRED})
TABLE_TEST(ChangeBToC, Lease(BlobRequest::CHANGE, kB, kC),
           Cell{S::AVAILABLE, 409, "LeaseNotPresentWithLeaseOperation", S::AVAILABLE},
           Cell{S::LEASED, 409, "LeaseIdMismatchWithLeaseOperation", S::LEASED},
           Cell{S::BREAKING, 409, "LeaseIdMismatchWithLeaseOperation", S::BREAKING},
           Cell{S::BROKEN, 409, "LeaseNotPresentWithLeaseOperation", S::BROKEN},
           Cell{S::EXPIRED, 409, "LeaseNotPresentWithLeaseOperation", S::EXPIRED})
TABLE_TEST(RenewA, Lease(BlobRequest::RENEW, kA),
           Cell{S::AVAILABLE, 409, "LeaseIdMismatchWithLeaseOperation", S::AVAILABLE},
           Cell{S::LEASED, 200, "", S::LEASED},
           Cell{S::BREAKING, 409, "LeaseIsBrokenAndCannotBeRenewed", S::BREAKING},
           Cell{S::BROKEN, 409, "LeaseIsBrokenAndCannotBeRenewed", S::BROKEN},
           Cell{S::EXPIRED, 200, "", S::LEASED})
TABLE_TEST(RenewB, Lease(BlobRequest::RENEW, kB),
           Cell{S::AVAILABLE, 409, "LeaseIdMismatchWithLeaseOperation", S::AVAILABLE},
           Cell{S::LEASED, 409, "LeaseIdMismatchWithLeaseOperation", S::LEASED},
           Cell{S::BREAKING, 409, "LeaseIdMismatchWithLeaseOperation", S::BREAKING},
           Cell{S::BROKEN, 409, "LeaseIdMismatchWithLeaseOperation", S::BROKEN},
           Cell{S::EXPIRED, 409, "LeaseIdMismatchWithLeaseOperation", S::EXPIRED})
TABLE_TEST(ReleaseA, Lease(BlobRequest::RELEASE, kA),
           Cell{S::AVAILABLE, 409, "LeaseIdMismatchWithLeaseOperation", S::AVAILABLE},
           Cell{S::LEASED, 200, "", S::AVAILABLE}, Cell{S::BREAKING, 200, "", S::AVAILABLE},
           Cell{S::BROKEN, 200, "", S::AVAILABLE}, Cell{S::EXPIRED, 200, "", S::AVAILABLE})
TABLE_TEST(ReleaseB, Lease(BlobRequest::RELEASE, kB),
           Cell{S::AVAILABLE, 409, "LeaseIdMismatchWithLeaseOperation", S::AVAILABLE},
           Cell{S::LEASED, 409, "LeaseIdMismatchWithLeaseOperation", S::LEASED},
           Cell{S::BREAKING, 409, "LeaseIdMismatchWithLeaseOperation", S::BREAKING},
           Cell{S::BROKEN, 409, "LeaseIdMismatchWithLeaseOperation", S::BROKEN},
           Cell{S::EXPIRED, 409, "LeaseIdMismatchWithLeaseOperation", S::EXPIRED})

// The first table: writes and reads by lease id and state.
TABLE_TEST(WriteWithA, Write(kA),
           Cell{S::AVAILABLE, 412, "LeaseNotPresentWithBlobOperation", S::AVAILABLE},
           Cell{S::LEASED, 200, "", S::LEASED}, Cell{S::BREAKING, 200, "", S::BREAKING},
           Cell{S::BROKEN, 412, "LeaseNotPresentWithBlobOperation", S::BROKEN},
           Cell{S::EXPIRED, 412, "LeaseLost", S::EXPIRED})
TABLE_TEST(WriteWithB, Write(kB),
           Cell{S::AVAILABLE, 412, "LeaseNotPresentWithBlobOperation", S::AVAILABLE},
           Cell{S::LEASED, 412, "LeaseIdMismatchWithBlobOperation", S::LEASED},
           Cell{S::BREAKING, 412, "LeaseIdMismatchWithBlobOperation", S::BREAKING},
           Cell{S::BROKEN, 412, "LeaseNotPresentWithBlobOperation", S::BROKEN},
           Cell{S::EXPIRED, 412, "LeaseLost", S::EXPIRED})
TABLE_TEST(WriteWithoutLease, Write(""), Cell{S::AVAILABLE, 200, "", S::AVAILABLE},
           Cell{S::LEASED, 412, "LeaseIdMissing", S::LEASED},
           Cell{S::BREAKING, 412, "LeaseIdMissing", S::BREAKING},
           Cell{S::BROKEN, 200, "", S::AVAILABLE}, Cell{S::EXPIRED, 200, "", S::AVAILABLE})
TABLE_TEST(ReadWithA, Read(kA),
           Cell{S::AVAILABLE, 412, "LeaseNotPresentWithBlobOperation", S::AVAILABLE},
           Cell{S::LEASED, 200, "", S::LEASED}, Cell{S::BREAKING, 200, "", S::BREAKING},
           Cell{S::BROKEN, 412, "LeaseNotPresentWithBlobOperation", S::BROKEN},
           Cell{S::EXPIRED, 412, "LeaseLost", S::EXPIRED})
TABLE_TEST(ReadWithB, Read(kB),
           Cell{S::AVAILABLE, 412, "LeaseNotPresentWithBlobOperation", S::AVAILABLE},
           Cell{S::LEASED, 412, "LeaseIdMismatchWithBlobOperation", S::LEASED},
           Cell{S::BREAKING, 412, "LeaseIdMismatchWithBlobOperation", S::BREAKING},
           Cell{S::BROKEN, 412, "LeaseNotPresentWithBlobOperation", S::BROKEN},
           Cell{S::EXPIRED, 412, "LeaseLost", S::EXPIRED})
TABLE_TEST(ReadWithoutLease, Read(""), Cell{S::AVAILABLE, 200, "", S::AVAILABLE},
           Cell{S::LEASED, 200, "", S::LEASED}, Cell{S::BREAKING, 200, "", S::BREAKING},
           Cell{S::BROKEN, 200, "", S::BROKEN}, Cell{S::EXPIRED, 200, "", S::EXPIRED})

TEST_F(BlobStateTest, ExpiryArrivesAsACoreLeaseRevoke) {
  ASSERT_EQ(Run(Acquire(kA, 15)).http_status(), 201);
  const int64_t core = StoredLease().core_lease_id();
  ASSERT_NE(core, 0);
  EXPECT_TRUE(sm_->IsBlobCoreLease(core));
  EXPECT_TRUE(sm_->leases().Contains(core));
  RevokeCoreLease(core);
  EXPECT_EQ(StoredLease().state(), BlobLease::EXPIRED);
  EXPECT_EQ(StoredLease().id(), kA);  // kept until the blob is written or leased again
  EXPECT_FALSE(sm_->IsBlobCoreLease(core));
  EXPECT_EQ(Run(Lease(BlobRequest::RENEW, kA)).http_status(), 200);
  EXPECT_EQ(State(), BlobLease::LEASED);
}

TEST_F(BlobStateTest, RenewAfterExpiryFailsOnceTheBlobWasWritten) {
  Reach(BlobLease::EXPIRED);
  ASSERT_EQ(Run(Write("")).http_status(), 200);
  EXPECT_EQ(Run(Lease(BlobRequest::RENEW, kA)).error_code(), "LeaseIdMismatchWithLeaseOperation");
}

TEST_F(BlobStateTest, BreakEndsWithTheBreakPeriodAndReportsItsLength) {
  ASSERT_EQ(Run(Acquire(kA, 60)).http_status(), 201);
  now_ += 10'000;
  BlobResponse response = Run(Break());  // no period: the rest of the lease
  EXPECT_EQ(response.lease_time_s(), 50);
  response = Run(Break(20));  // shortens
  EXPECT_EQ(response.lease_time_s(), 20);
  response = Run(Break(30));  // cannot lengthen
  EXPECT_EQ(response.lease_time_s(), 20);
  const int64_t core = StoredLease().core_lease_id();
  RevokeCoreLease(core);
  EXPECT_EQ(State(), BlobLease::BROKEN);
  EXPECT_EQ(Run(Acquire(kB, 15)).http_status(), 201);
}

TEST_F(BlobStateTest, InfiniteLeaseBreaksAtOnceUnlessGivenAPeriod) {
  ASSERT_EQ(Run(Acquire(kA, -1)).http_status(), 201);
  EXPECT_EQ(StoredLease().core_lease_id(), 0);
  now_ += 1'000'000;
  EXPECT_EQ(State(), BlobLease::LEASED);
  BlobResponse response = Run(Break(7));
  EXPECT_EQ(response.lease_time_s(), 7);
  EXPECT_EQ(State(), BlobLease::BREAKING);
  EXPECT_EQ(Run(Break()).lease_time_s(), 7);
  now_ += 7'000;
  EXPECT_EQ(State(), BlobLease::BROKEN);
}

TEST_F(BlobStateTest, LeaseOperationsKeepTheETag) {
  const BlobResponse before = Run(Read(""));
  ASSERT_EQ(Run(Acquire(kA, 15)).http_status(), 201);
  ASSERT_EQ(Run(Lease(BlobRequest::CHANGE, kA, kB)).http_status(), 200);
  ASSERT_EQ(Run(Break(0)).http_status(), 202);
  const BlobResponse after = Run(Read(""));
  EXPECT_EQ(after.etag_revision(), before.etag_revision());
  EXPECT_EQ(after.last_modified_ms(), before.last_modified_ms());
  ASSERT_EQ(Run(Write("")).http_status(), 200);
  EXPECT_GT(Run(Read("")).etag_revision(), before.etag_revision());
}

TEST_F(BlobStateTest, FencingTokensIncreaseAndGuardWrites) {
  const int64_t first = Run(Acquire(kA, 15)).fencing_token();
  ASSERT_GT(first, 0);
  const int64_t second = Run(Lease(BlobRequest::CHANGE, kA, kB)).fencing_token();
  EXPECT_GT(second, first);
  ASSERT_EQ(Run(Break(0)).http_status(), 202);
  const int64_t third = Run(Acquire(kC, 15)).fencing_token();
  EXPECT_GT(third, second);
  BlobRequest stale = Write(kC);
  stale.set_if_fencing_token(second);
  EXPECT_EQ(Run(stale).error_code(), "FencingTokenSuperseded");
  BlobRequest current = Write(kC);
  current.set_if_fencing_token(third);
  EXPECT_EQ(Run(current).http_status(), 200);
}

TEST_F(BlobStateTest, ConditionsOnWritesAndReads) {
  const BlobResponse props = Run(Read(""));
  BlobRequest write = Write("");
  write.mutable_conditions()->add_if_match("\"0x8D0000000000000\"");
  EXPECT_EQ(Run(write).error_code(), "ConditionNotMet");
  write.mutable_conditions()->clear_if_match();
  write.mutable_conditions()->add_if_match(BlobETag(props.etag_revision()));
  EXPECT_EQ(Run(write).http_status(), 200);
  BlobRequest read = Read("");
  read.mutable_conditions()->add_if_none_match(BlobETag(Run(Read("")).etag_revision()));
  EXPECT_EQ(Run(read).http_status(), 304);
  BlobRequest create_only = Op(BlobRequest::PUT_BLOB);
  create_only.mutable_conditions()->add_if_none_match("*");
  EXPECT_EQ(Run(create_only).error_code(), "BlobAlreadyExists");
}

TEST_F(BlobStateTest, LeasesSurviveAReopen) {
  ASSERT_EQ(Run(Acquire(kA, 15)).http_status(), 201);
  const int64_t core = StoredLease().core_lease_id();
  Reopen();
  EXPECT_EQ(State(), BlobLease::LEASED);
  EXPECT_TRUE(sm_->IsBlobCoreLease(core));
  EXPECT_TRUE(sm_->leases().Contains(core));
  RevokeCoreLease(core);
  EXPECT_EQ(State(), BlobLease::EXPIRED);
}

BlobRequest SetTags(const std::string& lease_id, std::map<std::string, std::string> tags) {
  BlobRequest r;
  r.set_op(BlobRequest::SET_BLOB_TAGS);
  r.set_container("c1");
  r.set_blob("b");
  r.set_lease_id(lease_id);
  r.mutable_tags()->insert(tags.begin(), tags.end());
  return r;
}

TEST_F(BlobStateTest, TagsAreNotTheBlobsData) {
  Reach(BlobLease::EXPIRED);
  const BlobResponse before = Run(Read(""));
  EXPECT_EQ(Run(SetTags("", {{"k", "v"}})).http_status(), 204);
  const BlobResponse after = Run(Read(""));
  EXPECT_THAT(after.record().tags(), Contains(Pair("k", "v")));
  EXPECT_EQ(after.etag_revision(), before.etag_revision());
  EXPECT_EQ(after.last_modified_ms(), before.last_modified_ms());
  // Unlike a write, setting tags leaves the expired lease renewable.
  EXPECT_EQ(Run(Lease(BlobRequest::RENEW, kA)).http_status(), 200);
  Reopen();
  EXPECT_THAT(Run(Read("")).record().tags(), Contains(Pair("k", "v")));
  // Put Blob replaces the tags with its own (none here).
  BlobRequest put = Op(BlobRequest::PUT_BLOB);
  put.set_lease_id(kA);
  ASSERT_EQ(Run(put).http_status(), 201);
  EXPECT_THAT(Run(Read("")).record().tags(), IsEmpty());
}

TEST_F(BlobStateTest, SettingTagsChecksTheLeaseAsAWrite) {
  EXPECT_EQ(Run(SetTags(kA, {})).error_code(), "LeaseNotPresentWithBlobOperation");
  Reach(BlobLease::LEASED);
  EXPECT_EQ(Run(SetTags("", {})).error_code(), "LeaseIdMissing");
  EXPECT_EQ(Run(SetTags(kB, {})).error_code(), "LeaseIdMismatchWithBlobOperation");
  EXPECT_EQ(Run(SetTags(kA, {{"k", "v"}})).http_status(), 204);
  BlobRequest get = Op(BlobRequest::GET_BLOB_TAGS);
  EXPECT_THAT(Run(get).record().tags(), Contains(Pair("k", "v")));  // a read needs no lease id
  get.set_lease_id(kB);
  EXPECT_EQ(Run(get).error_code(), "LeaseIdMismatchWithBlobOperation");
}

TEST_F(BlobStateTest, SettingTagsIsFencedAsAWrite) {
  ASSERT_EQ(Run(Acquire(kA, -1)).http_status(), 201);
  const int64_t token = StoredLease().fencing_token();
  ASSERT_EQ(Run(Lease(BlobRequest::CHANGE, kA, kB)).http_status(), 200);  // a newer token
  BlobRequest stale = SetTags(kB, {{"k", "v"}});
  stale.set_if_fencing_token(token);
  EXPECT_EQ(Run(stale).error_code(), "FencingTokenSuperseded");
  stale.set_if_fencing_token(StoredLease().fencing_token());
  EXPECT_EQ(Run(stale).http_status(), 204);
}

// Members that applied the same entries store the same bytes, whatever order protobuf would give
// the entries of a record's maps, so their state hashes agree.
TEST_F(BlobStateTest, TwinsHashTheSameTagsAndMetadataAlike) {
  BlobRequest put = Op(BlobRequest::PUT_BLOB, "tagged");
  for (int i = 0; i < 10; ++i) {
    (*put.mutable_tags())["tag" + std::to_string(i)] = std::to_string(i);
    (*put.mutable_metadata())["meta" + std::to_string(i)] = std::to_string(i);
  }
  ASSERT_EQ(Run(put).http_status(), 201);
  const uint32_t hash = *sm_->HashAll();
  for (int twin = 0; twin < 5; ++twin) {
    std::unique_ptr<Engine> engine;
    std::unique_ptr<StateMachine> sm;
    ASSERT_NO_FATAL_FAILURE(
        testing::ReopenStateMachine(dir_.Sub("twin" + std::to_string(twin)), &engine, &sm));
    uint64_t index = 1;
    for (BlobRequest request :
         {Op(BlobRequest::CREATE_CONTAINER, ""), Op(BlobRequest::PUT_BLOB), put}) {
      if (request.blob() == "b") request.set_content("hello");
      internalpb::InternalRequest entry;
      *entry.mutable_blob() = request;
      entry.set_time_unix_ms(kStart);
      ASSERT_TRUE(sm->Apply(index++, entry).status.ok());
    }
    sm->FlushApplied();
    EXPECT_EQ(*sm->HashAll(), hash) << "twin " << twin;
  }
}

TEST_F(BlobStateTest, SetBlobPropertiesReplacesPropertiesOnly) {
  BlobRequest put = Op(BlobRequest::PUT_BLOB);
  put.set_content("hello");
  put.mutable_properties()->set_content_type("text/plain");
  put.mutable_properties()->set_cache_control("no-cache");
  (*put.mutable_metadata())["owner"] = "me";
  (*put.mutable_tags())["env"] = "prod";
  ASSERT_EQ(Run(put).http_status(), 201);
  const BlobResponse before = Run(Read(""));
  BlobRequest set = Op(BlobRequest::SET_BLOB_PROPERTIES);
  set.mutable_properties()->set_content_language("en");
  EXPECT_EQ(Run(set).http_status(), 200);
  const BlobResponse after = Run(Read(""));
  EXPECT_NE(after.etag_revision(), before.etag_revision());
  EXPECT_EQ(after.record().properties().content_language(), "en");
  EXPECT_EQ(after.record().properties().content_type(), "");  // not sent: cleared
  EXPECT_EQ(after.record().properties().cache_control(), "");
  EXPECT_THAT(after.record().metadata(), Contains(Pair("owner", "me")));
  EXPECT_THAT(after.record().tags(), Contains(Pair("env", "prod")));
  EXPECT_EQ(after.record().content_length(), 5);
  Reach(BlobLease::LEASED);
  EXPECT_EQ(Run(set).error_code(), "LeaseIdMissing");
}

TEST_F(BlobStateTest, TagConditionsGuardBlobsOnly) {
  ASSERT_EQ(Run(SetTags("", {{"env", "prod"}})).http_status(), 204);
  BlobRequest write = Write("");
  write.mutable_conditions()->set_if_tags("env = 'test'");
  EXPECT_EQ(Run(write).error_code(), "ConditionNotMet");
  BlobRequest read = Read("");
  read.mutable_conditions()->set_if_tags("env = 'test'");
  EXPECT_EQ(Run(read).error_code(), "ConditionNotMet");
  write.mutable_conditions()->set_if_tags("env = 'prod'");
  EXPECT_EQ(Run(write).http_status(), 200);
  BlobRequest container = Op(BlobRequest::GET_CONTAINER_PROPERTIES, "");
  container.mutable_conditions()->set_if_tags("env = 'test'");
  EXPECT_EQ(Run(container).http_status(), 200);
  // A blob that does not exist is not found, whatever the condition; Put Blob creates it.
  BlobRequest missing = Op(BlobRequest::PUT_BLOB, "new");
  missing.mutable_conditions()->set_if_tags("env = 'test'");
  EXPECT_EQ(Run(missing).http_status(), 201);
}

TEST_F(BlobStateTest, DeletingTheContainerEndsItsBlobsLeases) {
  ASSERT_EQ(Run(Acquire(kA, 15)).http_status(), 201);
  const int64_t core = StoredLease().core_lease_id();
  EXPECT_EQ(Run(Op(BlobRequest::DELETE_CONTAINER, "")).http_status(), 202);
  EXPECT_FALSE(sm_->leases().Contains(core));
  EXPECT_EQ(Run(Read("")).error_code(), "ContainerNotFound");
}

}  // namespace
}  // namespace leasehold::storage
