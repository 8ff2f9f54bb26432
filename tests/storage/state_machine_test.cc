// The state machine through its public contract: Apply entries, read back, reopen from disk.
#include "storage/apply/state_machine.h"

#include <fstream>

#include <gtest/gtest.h>

#include "common/etcd_errors.h"
#include "storage/reopen.h"
#include "storage/temp_dir.h"

namespace leasehold::storage {
namespace {

using etcdserverpb::Compare;

class StateMachineTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    ASSERT_NO_FATAL_FAILURE(testing::ReopenStateMachine(dir_.Sub("db"), &engine_, &sm_));
    next_index_ = sm_->applied_index() + 1;
  }

  ApplyResult Apply(internalpb::InternalRequest entry, int64_t time_ms = 1'000'000) {
    entry.set_time_unix_ms(time_ms);
    ApplyResult result = sm_->Apply(next_index_++, entry);
    sm_->FlushApplied();
    return result;
  }

  ApplyResult Put(const std::string& key, const std::string& value, int64_t lease = 0) {
    internalpb::InternalRequest e;
    e.mutable_put()->set_key(key);
    e.mutable_put()->set_value(value);
    e.mutable_put()->set_lease(lease);
    return Apply(e);
  }

  ApplyResult Delete(const std::string& key, const std::string& end = "") {
    internalpb::InternalRequest e;
    e.mutable_delete_range()->set_key(key);
    e.mutable_delete_range()->set_range_end(end);
    e.mutable_delete_range()->set_prev_kv(true);
    return Apply(e);
  }

  ApplyResult Grant(int64_t id, int64_t ttl) {
    internalpb::InternalRequest e;
    e.mutable_lease_grant()->set_id(id);
    e.mutable_lease_grant()->set_ttl(ttl);
    return Apply(e);
  }

  ApplyResult Revoke(int64_t id) {
    internalpb::InternalRequest e;
    e.mutable_lease_revoke()->set_id(id);
    return Apply(e);
  }

  etcdserverpb::RangeResponse Get(const std::string& key, const std::string& end = "",
                                  int64_t rev = 0) {
    etcdserverpb::RangeRequest r;
    r.set_key(key);
    r.set_range_end(end);
    r.set_revision(rev);
    auto result = sm_->Range(r);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : etcdserverpb::RangeResponse();
  }

  testing::TempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<StateMachine> sm_;
  uint64_t next_index_ = 1;
};

TEST_F(StateMachineTest, RevisionsFollowEtcd) {
  EXPECT_EQ(sm_->revision(), 1);
  EXPECT_EQ(Put("a", "1").response.put().header().revision(), 2);
  EXPECT_EQ(Put("a", "2").response.put().header().revision(), 3);
  auto kv = Get("a").kvs(0);
  EXPECT_EQ(kv.create_revision(), 2);
  EXPECT_EQ(kv.mod_revision(), 3);
  EXPECT_EQ(kv.version(), 2);
  auto del = Delete("a");
  EXPECT_EQ(del.response.delete_range().deleted(), 1);
  EXPECT_EQ(del.response.delete_range().prev_kvs(0).value(), "2");
  EXPECT_EQ(sm_->revision(), 4);
  // Deleting nothing does not advance the revision.
  EXPECT_EQ(Delete("a").response.delete_range().header().revision(), 4);
  Put("a", "3");
  kv = Get("a").kvs(0);
  EXPECT_EQ(kv.create_revision(), 5);
  EXPECT_EQ(kv.version(), 1);
  // History: at revision 3 the key held "2"; at 4 it did not exist.
  EXPECT_EQ(Get("a", "", 3).kvs(0).value(), "2");
  EXPECT_EQ(Get("a", "", 4).kvs_size(), 0);
  // A read of the past answers, as etcd's does, with the current revision in its header; so does
  // such a range inside a read-only transaction, and inside a writing one with the transaction's
  // revision at that point (before its first write, the one it started from).
  EXPECT_EQ(Get("a", "", 3).header().revision(), sm_->revision());
  etcdserverpb::TxnRequest past;
  past.add_success()->mutable_request_range()->set_key("a");
  past.mutable_success(0)->mutable_request_range()->set_revision(3);
  auto read_only = sm_->ReadOnlyTxn(past);
  ASSERT_TRUE(read_only.ok()) << read_only.status();
  EXPECT_EQ(read_only->responses(0).response_range().kvs(0).value(), "2");
  EXPECT_EQ(read_only->responses(0).response_range().header().revision(), sm_->revision());
  internalpb::InternalRequest writing;
  *writing.mutable_txn() = past;
  writing.mutable_txn()->add_success()->mutable_request_put()->set_key("b");
  const int64_t before = sm_->revision();
  const auto written = Apply(writing).response.txn();
  EXPECT_EQ(written.responses(0).response_range().kvs(0).value(), "2");
  EXPECT_EQ(written.responses(0).response_range().header().revision(), before);
  Delete("b");
}

TEST_F(StateMachineTest, RangeOptions) {
  for (std::string k : {"p/c", "p/a", "p/b", "q"}) Put(k, "v" + k);
  etcdserverpb::RangeRequest r;
  r.set_key("p/");
  r.set_range_end("p0");
  r.set_limit(2);
  auto resp = *sm_->Range(r);
  ASSERT_EQ(resp.kvs_size(), 2);
  EXPECT_EQ(resp.kvs(0).key(), "p/a");
  EXPECT_TRUE(resp.more());
  EXPECT_EQ(resp.count(), 3);
  r.set_sort_target(etcdserverpb::RangeRequest::CREATE);
  r.set_sort_order(etcdserverpb::RangeRequest::DESCEND);
  r.set_limit(1);
  resp = *sm_->Range(r);
  EXPECT_EQ(resp.kvs(0).key(), "p/b");
  r.set_max_create_revision(3);
  resp = *sm_->Range(r);
  EXPECT_EQ(resp.kvs(0).key(), "p/a");
  r.Clear();
  r.set_key(std::string(1, '\0'));
  r.set_range_end(std::string(1, '\0'));
  r.set_keys_only(true);
  resp = *sm_->Range(r);
  EXPECT_EQ(resp.kvs_size(), 4);
  EXPECT_TRUE(resp.kvs(0).value().empty());
  r.set_count_only(true);
  resp = *sm_->Range(r);
  EXPECT_EQ(resp.kvs_size(), 0);
  EXPECT_EQ(resp.count(), 4);
}

TEST_F(StateMachineTest, CompactionKeepsLatestAndRefusesOldOrFuture) {
  Put("a", "1");
  Put("a", "2");
  Put("b", "1");
  Delete("b");  // revision 5
  internalpb::InternalRequest c;
  c.mutable_compaction()->set_revision(4);
  EXPECT_TRUE(Apply(c).status.ok());
  EXPECT_EQ(Apply(c).status.message(), "etcdserver: mvcc: required revision has been compacted");
  c.mutable_compaction()->set_revision(100);
  EXPECT_EQ(Apply(c).status.message(), "etcdserver: mvcc: required revision is a future revision");
  etcdserverpb::RangeRequest r;
  r.set_key("a");
  r.set_revision(2);
  EXPECT_EQ(sm_->Range(r).status().message(),
            "etcdserver: mvcc: required revision has been compacted");
  EXPECT_EQ(Get("a", "", 4).kvs(0).value(), "2");
  EXPECT_EQ(Get("b", "", 4).kvs(0).value(), "1");
  Reopen();
  EXPECT_EQ(sm_->compacted_revision(), 4);
  EXPECT_EQ(Get("a", "", 4).kvs(0).value(), "2");
}

TEST_F(StateMachineTest, AStoreNeverCompactedTakesACompactionToZeroOnce) {
  Put("a", "1");
  internalpb::InternalRequest c;
  c.mutable_compaction()->set_revision(0);
  Reopen();                           // "never compacted" survives a restart
  EXPECT_TRUE(Apply(c).status.ok());  // as etcd: compacted revision 0
  EXPECT_EQ(sm_->compacted_revision(), 0);
  EXPECT_EQ(Get("a").kvs(0).value(), "1");
  Reopen();
  EXPECT_EQ(Apply(c).status.message(), "etcdserver: mvcc: required revision has been compacted");
}

TEST_F(StateMachineTest, TxnComparesAndNestedHeaders) {
  Grant(9, 30);
  Put("k", "v", 9);  // revision 2
  internalpb::InternalRequest e;
  auto* txn = e.mutable_txn();
  auto* cmp = txn->add_compare();
  cmp->set_key("k");
  cmp->set_target(Compare::VALUE);
  cmp->set_value("v");
  cmp = txn->add_compare();
  cmp->set_key("k");
  cmp->set_target(Compare::LEASE);
  cmp->set_lease(9);
  cmp = txn->add_compare();
  cmp->set_key("missing");
  cmp->set_target(Compare::CREATE);
  cmp->set_create_revision(0);
  auto* put = txn->add_success()->mutable_request_put();
  put->set_key("k2");
  put->set_value("x");
  txn->add_success()->mutable_request_range()->set_key("k2");
  txn->add_failure()->mutable_request_range()->set_key("k");
  auto result = Apply(e);
  ASSERT_TRUE(result.status.ok());
  const auto& resp = result.response.txn();
  EXPECT_TRUE(resp.succeeded());
  EXPECT_EQ(resp.header().revision(), 3);
  EXPECT_EQ(resp.responses(0).response_put().header().revision(), 3);
  EXPECT_EQ(resp.responses(1).response_range().kvs(0).value(), "x");

  // A failing compare takes the failure branch; a read-only branch keeps the revision.
  txn->mutable_compare(0)->set_value("other");
  result = Apply(e);
  EXPECT_FALSE(result.response.txn().succeeded());
  EXPECT_EQ(result.response.txn().header().revision(), 3);
  // A VALUE compare on a missing key is false whatever the operator.
  cmp = txn->mutable_compare(0);
  cmp->set_key("nope");
  cmp->set_result(Compare::NOT_EQUAL);
  EXPECT_FALSE(Apply(e).response.txn().succeeded());

  // A nested transaction's response has a header, left empty as etcd leaves it.
  txn->mutable_compare()->Clear();
  internalpb::InternalRequest outer;
  *outer.mutable_txn()->add_success()->mutable_request_txn() = *txn;
  result = Apply(outer);
  ASSERT_TRUE(result.status.ok());
  ASSERT_TRUE(result.response.txn().responses(0).response_txn().has_header());
  EXPECT_EQ(result.response.txn().responses(0).response_txn().header().revision(), 0);
  EXPECT_EQ(result.response.txn().header().revision(), 4);  // the nested put of k2
}

TEST_F(StateMachineTest, TxnWithUnknownLeaseFailsWhole) {
  internalpb::InternalRequest e;
  auto* put = e.mutable_txn()->add_success()->mutable_request_put();
  put->set_key("a");
  put->set_lease(12345);
  auto* put2 = e.mutable_txn()->add_success()->mutable_request_put();
  put2->set_key("b");
  auto result = Apply(e);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Get("b").kvs_size(), 0);
  EXPECT_EQ(sm_->revision(), 1);
}

TEST_F(StateMachineTest, LeaseGrantRules) {
  auto r = Grant(1, 0);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.response.lease_grant().ttl(), 2);  // raised to the minimum
  EXPECT_EQ(Grant(1, 10).status.message(), "etcdserver: lease already exists");
  EXPECT_EQ(Grant(1, 10).status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Grant(2, kMaxLeaseTtlSeconds + 1).status.message(), "etcdserver: too large lease TTL");
  EXPECT_TRUE(Grant(3, kMaxLeaseTtlSeconds).status.ok());
  EXPECT_TRUE(Grant(-5, 10).status.ok());  // negative client-chosen ids are valid
  EXPECT_EQ(sm_->revision(), 1);           // grants do not touch the key space
}

TEST_F(StateMachineTest, PutWithUnknownLeaseWritesNothing) {
  auto r = Put("a", "1", 77);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status.message(), "etcdserver: requested lease not found");
  EXPECT_EQ(Get("a").kvs_size(), 0);
  EXPECT_EQ(sm_->revision(), 1);
}

TEST_F(StateMachineTest, RevokeDeletesKeysInOneRevisionSorted) {
  Grant(5, 30);
  Put("z", "1", 5);
  Put("a", "1", 5);
  Put("m", "1", 5);  // revision 4
  auto r = Revoke(5);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.response.lease_revoke().header().revision(), 5);
  EXPECT_EQ(Get("a", std::string(1, '\0')).kvs_size(), 0);
  // One revision, sub-revisions in key order: the tombstones sit at (5,0) a, (5,1) m, (5,2) z.
  EXPECT_EQ(Get("a", "", 4).kvs_size(), 1);
  EXPECT_EQ(Revoke(5).status.code(), absl::StatusCode::kNotFound);
  // A lease with no keys revokes without a new revision.
  Grant(6, 30);
  EXPECT_EQ(Revoke(6).response.lease_revoke().header().revision(), 5);
}

TEST_F(StateMachineTest, ExpiryRevokesEachLeaseInARevisionOfItsOwn) {
  Grant(1, 30);
  Grant(2, 30);
  Grant(3, 30);
  Put("b", "1", 1);
  Put("c", "1", 1);
  Put("a", "1", 2);  // revision 4; lease 3 holds no key
  internalpb::InternalRequest e;
  // In the order given; 9 is unknown (revoked meanwhile, say) and skipped.
  for (int64_t id : {2, 9, 3, 1}) e.mutable_lease_expiry()->add_ids(id);
  auto r = Apply(e, 1'030'001);  // past their deadlines (granted at 1'000'000 for 30 s)
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_EQ(r.events[0].kv().key(), "a");
  EXPECT_EQ(r.events[0].kv().mod_revision(), 5);
  EXPECT_EQ(r.events[1].kv().key(), "b");
  EXPECT_EQ(r.events[1].kv().mod_revision(), 6);
  EXPECT_EQ(r.events[2].kv().key(), "c");
  EXPECT_EQ(r.events[2].kv().mod_revision(), 6);
  for (const auto& event : r.events) EXPECT_EQ(event.type(), mvccpb::Event::DELETE);
  EXPECT_EQ(sm_->revision(), 6);
  EXPECT_EQ(Get("a", "z").kvs_size(), 0);
  EXPECT_FALSE(sm_->leases().Contains(1));
  EXPECT_FALSE(sm_->leases().Contains(2));
  EXPECT_FALSE(sm_->leases().Contains(3));
  // Gone after a restart too.
  Reopen();
  EXPECT_FALSE(sm_->leases().Contains(1));
  EXPECT_EQ(sm_->revision(), 6);
}

TEST_F(StateMachineTest, ExpirySkipsALeaseCheckpointedPastTheDecision) {
  Grant(1, 30);  // at 1'000'000: due at 1'030'000
  Put("a", "1", 1);
  internalpb::InternalRequest checkpoint;
  auto* e = checkpoint.mutable_lease_checkpoint()->add_entries();
  e->set_id(1);
  e->set_remaining_ms(40'000);
  ASSERT_TRUE(Apply(checkpoint, 1'010'000).status.ok());  // now due at 1'050'000
  internalpb::InternalRequest expiry;
  expiry.set_leader_term(1);
  expiry.mutable_lease_expiry()->add_ids(1);
  // Decided at 1'031'000 on the lease's old deadline: the later promise wins.
  EXPECT_TRUE(Apply(expiry, 1'031'000).events.empty());
  EXPECT_EQ(Get("a").kvs_size(), 1);
  EXPECT_TRUE(sm_->leases().Contains(1));
  // So does a leader's single revoke of it (made when a keep-alive found it expired); a client's
  // revoke (no leader term) is not a decision about time and applies.
  internalpb::InternalRequest revoke;
  revoke.set_leader_term(1);
  revoke.mutable_lease_revoke()->set_id(1);
  EXPECT_EQ(Apply(revoke, 1'031'000).status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(sm_->leases().Contains(1));
  // Decided after the new deadline: revoked.
  EXPECT_EQ(Apply(expiry, 1'050'001).events.size(), 1u);
  EXPECT_FALSE(sm_->leases().Contains(1));
  Grant(2, 30);
  EXPECT_TRUE(Revoke(2).status.ok());
}

TEST_F(StateMachineTest, LeaseSwitchAndDetach) {
  Grant(1, 30);
  Grant(2, 30);
  Put("foo", "a", 1);
  Put("foo", "b", 2);  // switches to lease 2
  Revoke(1);
  EXPECT_EQ(Get("foo").kvs_size(), 1);
  Put("foo", "c");  // no lease: detached from 2
  Revoke(2);
  EXPECT_EQ(Get("foo").kvs_size(), 1);
  Grant(3, 30);
  Put("bar", "a", 3);
  internalpb::InternalRequest e;
  e.mutable_put()->set_key("bar");
  e.mutable_put()->set_value("b");
  e.mutable_put()->set_ignore_lease(true);
  ASSERT_TRUE(Apply(e).status.ok());
  EXPECT_EQ(Get("bar").kvs(0).lease(), 3);
  e.mutable_put()->set_key("nokey");
  EXPECT_EQ(Apply(e).status.message(), "etcdserver: key not found");
  Revoke(3);
  EXPECT_EQ(Get("bar").kvs_size(), 0);
}

TEST_F(StateMachineTest, RestartRestoresKeysLeasesAndIndex) {
  Grant(1, 60);
  Put("a", "1", 1);
  Put("b", "2");
  const uint64_t applied = sm_->applied_index();
  Reopen();
  EXPECT_EQ(sm_->applied_index(), applied);
  EXPECT_EQ(sm_->revision(), 3);
  EXPECT_EQ(Get("a").kvs(0).lease(), 1);
  auto ttl = sm_->leases().Lookup(1, 1'000'000, true);
  ASSERT_TRUE(ttl.has_value());
  EXPECT_EQ(ttl->keys, std::vector<std::string>{"a"});
  // The deadline is the grant time plus TTL: read in the grant's millisecond, 59 (etcd's answer
  // right after a grant).
  EXPECT_EQ(ttl->remaining_seconds, 59);
  Revoke(1);
  EXPECT_EQ(Get("a").kvs_size(), 0);
  EXPECT_EQ(Get("b").kvs_size(), 1);
}

TEST_F(StateMachineTest, NospaceRefusesGrowthUntilClearedAndSurvivesRestart) {
  auto alarm = [&](etcdserverpb::AlarmRequest::AlarmAction action, uint64_t member) {
    internalpb::InternalRequest e;
    e.mutable_alarm()->set_action(action);
    e.mutable_alarm()->set_memberid(member);
    e.mutable_alarm()->set_alarm(etcdserverpb::NOSPACE);
    return Apply(e);
  };
  Grant(1, 60);
  Put("a", "1", 1);
  ApplyResult raised = alarm(etcdserverpb::AlarmRequest::ACTIVATE, 7);
  ASSERT_EQ(raised.response.alarm().alarms_size(), 1);
  EXPECT_EQ(raised.response.alarm().alarms(0).memberid(), 7u);
  EXPECT_EQ(alarm(etcdserverpb::AlarmRequest::ACTIVATE, 7).response.alarm().alarms_size(),
            1);  // as etcd: answered again
  Reopen();
  EXPECT_TRUE(sm_->alarms().Raised(etcdserverpb::NOSPACE));
  EXPECT_EQ(Put("b", "2").status, errors::NoSpace());
  EXPECT_EQ(Grant(2, 60).status, errors::NoSpace());
  internalpb::InternalRequest txn;
  auto* put = txn.mutable_txn()->add_success()->mutable_request_put();
  put->set_key("c");
  EXPECT_EQ(Apply(txn).status, errors::NoSpace());
  EXPECT_EQ(sm_->revision(), 2);
  // What frees space still applies.
  EXPECT_TRUE(Revoke(1).status.ok());
  EXPECT_EQ(Get("a").kvs_size(), 0);
  EXPECT_EQ(alarm(etcdserverpb::AlarmRequest::DEACTIVATE, 8).response.alarm().alarms_size(),
            0);  // not raised by 8
  EXPECT_EQ(alarm(etcdserverpb::AlarmRequest::DEACTIVATE, 7).response.alarm().alarms_size(), 1);
  EXPECT_FALSE(sm_->alarms().Raised(etcdserverpb::NOSPACE));
  EXPECT_TRUE(Put("b", "2").status.ok());
  Reopen();
  EXPECT_TRUE(sm_->alarms().List(etcdserverpb::NONE).empty());
}

TEST_F(StateMachineTest, CorruptRefusesEveryChangeToKeysAndLeasesUntilCleared) {
  auto alarm = [&](etcdserverpb::AlarmRequest::AlarmAction action) {
    internalpb::InternalRequest e;
    e.mutable_alarm()->set_action(action);
    e.mutable_alarm()->set_memberid(3);
    e.mutable_alarm()->set_alarm(etcdserverpb::CORRUPT);
    return Apply(e);
  };
  Grant(1, 60);
  Put("a", "1", 1);
  ASSERT_EQ(alarm(etcdserverpb::AlarmRequest::ACTIVATE).response.alarm().alarms_size(), 1);
  Reopen();
  EXPECT_TRUE(sm_->alarms().Raised(etcdserverpb::CORRUPT));
  EXPECT_EQ(Put("b", "2").status, errors::Corrupt());
  EXPECT_EQ(Grant(2, 60).status, errors::Corrupt());
  EXPECT_EQ(Revoke(1).status, errors::Corrupt());
  internalpb::InternalRequest del;
  del.mutable_delete_range()->set_key("a");
  EXPECT_EQ(Apply(del).status, errors::Corrupt());
  internalpb::InternalRequest txn;
  txn.mutable_txn()->add_success()->mutable_request_put()->set_key("c");
  EXPECT_EQ(Apply(txn).status, errors::Corrupt());
  internalpb::InternalRequest compact;
  compact.mutable_compaction()->set_revision(1);
  EXPECT_EQ(Apply(compact).status, errors::Corrupt());
  EXPECT_EQ(sm_->revision(), 2);
  EXPECT_EQ(Get("a").kvs_size(), 1);  // reads are served
  EXPECT_EQ(alarm(etcdserverpb::AlarmRequest::DEACTIVATE).response.alarm().alarms_size(), 1);
  EXPECT_TRUE(Put("b", "2").status.ok());
  EXPECT_TRUE(Revoke(1).status.ok());
}

TEST_F(StateMachineTest, HistoryReadsSeeVersionsBeforeTheyAreFlushed) {
  internalpb::InternalRequest e;
  e.mutable_put()->set_key("a");
  e.mutable_put()->set_value("1");
  sm_->Apply(next_index_++, e);
  e.mutable_put()->set_value("2");
  sm_->Apply(next_index_++, e);
  EXPECT_EQ(Get("a", "", 2).kvs(0).value(), "1");  // not yet in the engine
  sm_->FlushApplied();
  EXPECT_EQ(Get("a", "", 2).kvs(0).value(), "1");  // now read from the engine
  Reopen();
  EXPECT_EQ(Get("a").kvs(0).value(), "2");
}

TEST(EngineTest, RefusesForeignDataDir) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.Sub("foreign"));
  { std::ofstream(dir.Sub("foreign/notes.txt")) << "not a database"; }
  auto engine = Engine::Open(dir.Sub("foreign"));
  EXPECT_EQ(engine.status().code(), absl::StatusCode::kFailedPrecondition);
}

// Two members that applied the same entries agree on both hashes; one that applied something else
// does not. A revision hashed later, after more writes and a compaction that keeps its versions,
// hashes as it did when it was current; a compaction that drops versions changes the hash.
TEST_F(StateMachineTest, HashesAgreeOnTheSameStateAndTellOthersApart) {
  Put("a", "1");
  Put("b", "2");
  Delete("a");
  auto at4 = sm_->HashKv(0);
  ASSERT_TRUE(at4.ok()) << at4.status();
  EXPECT_EQ(at4->revision, 4);
  const uint32_t all = *sm_->HashAll();

  std::unique_ptr<Engine> twin_engine, other_engine;
  std::unique_ptr<StateMachine> twin, other;
  ASSERT_NO_FATAL_FAILURE(testing::ReopenStateMachine(dir_.Sub("twin"), &twin_engine, &twin));
  ASSERT_NO_FATAL_FAILURE(testing::ReopenStateMachine(dir_.Sub("other"), &other_engine, &other));
  uint64_t index = 1;
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "2"}}) {
    internalpb::InternalRequest e;
    e.set_time_unix_ms(1'000'000);
    e.mutable_put()->set_key(key);
    e.mutable_put()->set_value(value);
    twin->Apply(index, e);
    e.mutable_put()->set_value(value + "!");
    other->Apply(index++, e);
  }
  internalpb::InternalRequest del;
  del.set_time_unix_ms(1'000'000);
  del.mutable_delete_range()->set_key("a");
  del.mutable_delete_range()->set_prev_kv(true);
  twin->Apply(index, del);
  other->Apply(index, del);
  twin->FlushApplied();
  other->FlushApplied();
  EXPECT_EQ(twin->HashKv(0)->hash, at4->hash);
  EXPECT_EQ(*twin->HashAll(), all);
  EXPECT_NE(other->HashKv(0)->hash, at4->hash);
  EXPECT_NE(*other->HashAll(), all);

  Put("c", "3");
  EXPECT_NE(sm_->HashKv(0)->hash, at4->hash);
  EXPECT_EQ(sm_->HashKv(4)->hash, at4->hash);
  const uint32_t at5 = sm_->HashKv(5)->hash;
  // Compacting at 3 keeps every version revisions 4 and 5 read (a@2 is still a's latest at 3).
  internalpb::InternalRequest compact;
  compact.mutable_compaction()->set_revision(3);
  ASSERT_TRUE(Apply(compact).status.ok());
  auto after = sm_->HashKv(4);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->compact_revision, 3);
  EXPECT_EQ(after->hash, at4->hash);
  // Compacting at 5 drops a's versions (deleted at 4): the current revision hashes fewer records.
  compact.mutable_compaction()->set_revision(5);
  ASSERT_TRUE(Apply(compact).status.ok());
  EXPECT_NE(sm_->HashKv(0)->hash, at5);
}

TEST_F(StateMachineTest, HashKvRefusesCompactedAndFutureRevisionsAsEtcd) {
  Put("a", "1");
  Put("a", "2");
  internalpb::InternalRequest compact;
  compact.mutable_compaction()->set_revision(2);
  ASSERT_TRUE(Apply(compact).status.ok());
  EXPECT_EQ(sm_->HashKv(2).status(), errors::Compacted());
  EXPECT_EQ(sm_->HashKv(1).status(), errors::Compacted());
  EXPECT_EQ(sm_->HashKv(4).status(), errors::FutureRevision());
  auto at3 = sm_->HashKv(3);
  ASSERT_TRUE(at3.ok()) << at3.status();
  EXPECT_EQ(at3->compact_revision, 2);
  EXPECT_EQ(at3->hash, sm_->HashKv(0)->hash);
}

// etcd's MemberUpdate as an entry: the member's peer URLs change and stay changed after a restart;
// an unknown member, or URLs another member has, are refused at apply and change nothing.
TEST_F(StateMachineTest, MemberUpdateReplacesPeerUrlsOrRefusesAsEtcd) {
  auto add = [&](uint64_t id, const std::string& url) {
    raftpb::ConfChange change;
    change.set_type(raftpb::CONF_ADD_VOTER);
    change.set_node_id(id);
    internalpb::MemberRecord record;
    record.add_peer_urls(url);
    change.set_context(record.SerializeAsString());
    sm_->ApplyConfChange(next_index_++, change, raftpb::ConfState());
    sm_->FlushApplied();
  };
  add(1, "http://10.0.0.1:2380");
  add(2, "http://10.0.0.2:2380");
  auto update = [&](uint64_t id, std::vector<std::string> urls) {
    internalpb::InternalRequest e;
    e.mutable_member_update()->set_id(id);
    for (auto& url : urls) e.mutable_member_update()->add_peer_urls(url);
    return Apply(e).status;
  };
  auto urls_of = [&](uint64_t id) {
    auto record = sm_->members().Find(id);
    return record ? std::vector<std::string>(record->peer_urls().begin(), record->peer_urls().end())
                  : std::vector<std::string>{"absent"};
  };

  EXPECT_EQ(update(3, {"http://10.0.0.3:2380"}), errors::MemberNotFound());
  EXPECT_EQ(update(2, {"http://10.0.0.9:2380", "http://10.0.0.1:2380"}), errors::PeerUrlExists());
  EXPECT_EQ(urls_of(2), std::vector<std::string>{"http://10.0.0.2:2380"});

  ASSERT_TRUE(
      update(2, {"http://10.0.0.2:2380", "http://10.0.0.7:2381"}).ok());  // its own URL may stay
  EXPECT_EQ(urls_of(2), (std::vector<std::string>{"http://10.0.0.2:2380", "http://10.0.0.7:2381"}));
  EXPECT_EQ(urls_of(1), std::vector<std::string>{"http://10.0.0.1:2380"});
  const uint64_t applied = sm_->applied_index();
  Reopen();
  EXPECT_EQ(sm_->applied_index(), applied);
  EXPECT_EQ(urls_of(2), (std::vector<std::string>{"http://10.0.0.2:2380", "http://10.0.0.7:2381"}));
}

// What the client-facing calls ask on every request (etcd 3.4's learner refusal): whether a member
// is a learner, from adding it as one to its promotion; an unknown member or a voter is not.
TEST_F(StateMachineTest, MemberTableSaysWhoIsALearner) {
  auto change = [&](raftpb::ConfChangeType type, uint64_t id) {
    raftpb::ConfChange c;
    c.set_type(type);
    c.set_node_id(id);
    internalpb::MemberRecord record;
    record.add_peer_urls("http://10.0.0." + std::to_string(id) + ":2380");
    c.set_context(record.SerializeAsString());
    sm_->ApplyConfChange(next_index_++, c, raftpb::ConfState());
    sm_->FlushApplied();
  };
  change(raftpb::CONF_ADD_VOTER, 1);
  change(raftpb::CONF_ADD_LEARNER, 2);
  EXPECT_FALSE(sm_->members().IsLearner(1));
  EXPECT_TRUE(sm_->members().IsLearner(2));
  EXPECT_FALSE(sm_->members().IsLearner(3));
  Reopen();
  EXPECT_TRUE(sm_->members().IsLearner(2));
  change(raftpb::CONF_PROMOTE_LEARNER, 2);
  EXPECT_FALSE(sm_->members().IsLearner(2));
}

// etcd's removed set: a removed member stays removed across restarts and in snapshots, so that it
// can be refused if it comes back on its old data.
TEST_F(StateMachineTest, MemberTableRemembersWhoWasRemoved) {
  auto change = [&](raftpb::ConfChangeType type, uint64_t id) {
    raftpb::ConfChange c;
    c.set_type(type);
    c.set_node_id(id);
    sm_->ApplyConfChange(next_index_++, c, raftpb::ConfState());
    sm_->FlushApplied();
  };
  change(raftpb::CONF_ADD_VOTER, 1);
  change(raftpb::CONF_ADD_VOTER, 2);
  change(raftpb::CONF_REMOVE_NODE, 2);
  EXPECT_TRUE(sm_->members().WasRemoved(2));
  EXPECT_FALSE(sm_->members().WasRemoved(1));
  EXPECT_FALSE(sm_->members().WasRemoved(3));  // never a member
  EXPECT_FALSE(sm_->members().Find(2).has_value());
  Reopen();
  EXPECT_TRUE(sm_->members().WasRemoved(2));
  EXPECT_EQ(sm_->members().List().size(), 1u);
  EXPECT_TRUE(MemberTable::IsMembershipKey(keys::Meta("removed_member/12345678")));
  EXPECT_FALSE(MemberTable::IsMembershipKey(keys::Meta("identity")));

  testing::TempDir other;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<StateMachine> copy;
  ASSERT_NO_FATAL_FAILURE(testing::CopyBySnapshot(*sm_, other.Sub("db"), &engine, &copy));
  EXPECT_TRUE(copy->members().WasRemoved(2));
  EXPECT_FALSE(copy->members().WasRemoved(1));
}

}  // namespace
}  // namespace leasehold::storage
