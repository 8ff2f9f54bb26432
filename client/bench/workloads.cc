#include "client/bench/workloads.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "client/bench/keepalive_load.h"
#include "client/bench/unary_call.h"
#include "client/bench/watch_client.h"

namespace leasehold::bench {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;

// ---- single calls ----

void Grant(Connections& c, int client, int64_t ttl,
           std::function<void(const grpc::Status&, int64_t)> then) {
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(ttl);
  auto* stub = c.lease(client);
  CallUnary<etcdserverpb::LeaseGrantRequest, etcdserverpb::LeaseGrantResponse>(
      [stub](auto* ctx, auto* rq, auto* rs, auto cb) {
        stub->async()->LeaseGrant(ctx, rq, rs, std::move(cb));
      },
      std::move(req),
      [then = std::move(then)](const grpc::Status& s, const auto& resp) { then(s, resp.id()); });
}

void Revoke(Connections& c, int client, int64_t id, OpDone then) {
  etcdserverpb::LeaseRevokeRequest req;
  req.set_id(id);
  auto* stub = c.lease(client);
  CallUnary<etcdserverpb::LeaseRevokeRequest, etcdserverpb::LeaseRevokeResponse>(
      [stub](auto* ctx, auto* rq, auto* rs, auto cb) {
        stub->async()->LeaseRevoke(ctx, rq, rs, std::move(cb));
      },
      std::move(req), [then = std::move(then)](const grpc::Status& s, const auto&) { then(s); });
}

void Put(Connections& c, int client, std::string key, std::string value, int64_t lease,
         OpDone then) {
  etcdserverpb::PutRequest req;
  req.set_key(std::move(key));
  req.set_value(std::move(value));
  req.set_lease(lease);
  auto* stub = c.kv(client);
  CallUnary<etcdserverpb::PutRequest, etcdserverpb::PutResponse>(
      [stub](auto* ctx, auto* rq, auto* rs, auto cb) {
        stub->async()->Put(ctx, rq, rs, std::move(cb));
      },
      std::move(req), [then = std::move(then)](const grpc::Status& s, const auto&) { then(s); });
}

void Range(Connections& c, int client, RangeRequest req,
           std::function<void(const grpc::Status&, const etcdserverpb::RangeResponse&)> then) {
  auto* stub = c.kv(client);
  CallUnary<RangeRequest, etcdserverpb::RangeResponse>(
      [stub](auto* ctx, auto* rq, auto* rs, auto cb) {
        stub->async()->Range(ctx, rq, rs, std::move(cb));
      },
      std::move(req), std::move(then));
}

void Txn(Connections& c, int client, etcdserverpb::TxnRequest req,
         std::function<void(const grpc::Status&, const etcdserverpb::TxnResponse&)> then) {
  auto* stub = c.kv(client);
  CallUnary<etcdserverpb::TxnRequest, etcdserverpb::TxnResponse>(
      [stub](auto* ctx, auto* rq, auto* rs, auto cb) {
        stub->async()->Txn(ctx, rq, rs, std::move(cb));
      },
      std::move(req), std::move(then));
}

void Delete(Connections& c, int client, std::string key, OpDone then) {
  etcdserverpb::DeleteRangeRequest req;
  req.set_key(std::move(key));
  auto* stub = c.kv(client);
  CallUnary<etcdserverpb::DeleteRangeRequest, etcdserverpb::DeleteRangeResponse>(
      [stub](auto* ctx, auto* rq, auto* rs, auto cb) {
        stub->async()->DeleteRange(ctx, rq, rs, std::move(cb));
      },
      std::move(req), [then = std::move(then)](const grpc::Status& s, const auto&) { then(s); });
}

std::string KeyOf(int64_t n, int size, const std::string& prefix = "bench/") {
  std::string digits = std::to_string(n);
  std::string key = prefix;
  if (static_cast<int>(digits.size()) < size) key.append(size - digits.size(), '0');
  return key + digits;
}

// The first key under `prefix` by create revision (oldest or youngest), as etcd's Mutex reads it.
RangeRequest ByCreateRevision(const std::string& prefix, RangeRequest::SortOrder order) {
  RangeRequest r;
  r.set_key(prefix);
  r.set_range_end(prefix.substr(0, prefix.size() - 1) + "0");
  r.set_sort_target(RangeRequest::CREATE);
  r.set_sort_order(order);
  r.set_limit(1);
  return r;
}

LoadSpec SpecOf(const Options& o) { return LoadSpec{o.clients, o.total, o.duration_s, o.rate}; }

// Grants `count` leases with the given TTL using `concurrency` closed-loop clients.
std::vector<int64_t> GrantMany(Connections& c, int64_t count, int64_t ttl, int concurrency) {
  std::vector<int64_t> ids(static_cast<size_t>(count), 0);
  std::atomic<int64_t> next{0};
  RunLoad(LoadSpec{concurrency, count, 0, 0}, [&](int client, OpDone done) {
    const int64_t slot = next.fetch_add(1);
    Grant(c, client, ttl, [&ids, slot, done](const grpc::Status& s, int64_t id) {
      if (s.ok()) ids[static_cast<size_t>(slot)] = id;
      done(s);
    });
  });
  return ids;
}

// Revokes `ids` (skipping zeros) and returns once every revoke has been answered.
void RevokeMany(Connections& c, const std::vector<int64_t>& ids, int concurrency) {
  std::atomic<size_t> next{0};
  RunLoad(LoadSpec{concurrency, static_cast<int64_t>(ids.size()), 0, 0},
          [&](int client, OpDone done) {
            const int64_t id = ids[next.fetch_add(1)];
            if (id == 0) return done(grpc::Status::OK);
            Revoke(c, client, id, std::move(done));
          });
}

// Per-client pseudo-random streams, seeded by client index so runs are comparable.
class ClientRandom {
 public:
  explicit ClientRandom(int clients) {
    for (int i = 0; i < clients; ++i)
      engines_.emplace_back(std::make_unique<std::mt19937_64>(0x5eed + i));
  }
  uint64_t Next(int client) { return (*engines_[static_cast<size_t>(client)])(); }

 private:
  std::vector<std::unique_ptr<std::mt19937_64>> engines_;
};

// ---- workloads ----

Report LeaseGrantLoad(const Options& o, Connections& c) {
  Report r;
  std::atomic<int64_t> revoking{0}, keys{0};
  r.load = RunLoad(SpecOf(o), [&](int client, OpDone done) {
    Grant(c, client, o.ttl,
          [&c, &o, &revoking, &keys, client, done](const grpc::Status& s, int64_t id) {
            auto finish = [&c, &o, &revoking, client, id, done](const grpc::Status& status) {
              // The revoke keeps the lease count bounded; it is not part of the measured operation.
              if (status.ok() && o.revoke) {
                revoking.fetch_add(1);
                Revoke(c, client, id, [&revoking](const grpc::Status&) { revoking.fetch_sub(1); });
              }
              done(status);
            };
            if (!s.ok() || !o.with_key) return finish(s);
            Put(c, client, KeyOf(keys.fetch_add(1), 8, "lease-keys/"), "x", id, finish);
          });
  });
  // Every callback must have run before the connections go away.
  while (revoking.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return r;
}

Report TimeToLiveLoad(const Options& o, Connections& c) {
  auto ids = GrantMany(c, o.clients, 3600, std::min(o.clients, 64));
  Report r;
  r.load = RunLoad(SpecOf(o), [&](int client, OpDone done) {
    etcdserverpb::LeaseTimeToLiveRequest req;
    req.set_id(ids[static_cast<size_t>(client)]);
    auto* stub = c.lease(client);
    CallUnary<etcdserverpb::LeaseTimeToLiveRequest, etcdserverpb::LeaseTimeToLiveResponse>(
        [stub](auto* ctx, auto* rq, auto* rs, auto cb) {
          stub->async()->LeaseTimeToLive(ctx, rq, rs, std::move(cb));
        },
        std::move(req),
        [done](const grpc::Status& s, const auto& resp) {
          done(s.ok() && resp.ttl() <= 0 ? grpc::Status(grpc::StatusCode::NOT_FOUND, "lease gone")
                                         : s);
        });
  });
  RevokeMany(c, ids, std::min(o.clients, 64));
  return r;
}

Report PutLoad(const Options& o, Connections& c) {
  std::vector<int64_t> leases(static_cast<size_t>(o.clients), 0);
  if (o.with_lease) leases = GrantMany(c, o.clients, 3600, std::min(o.clients, 64));
  ClientRandom random(o.clients);
  const std::string value(static_cast<size_t>(o.value_size), 'x');
  Report r;
  r.load = RunLoad(SpecOf(o), [&](int client, OpDone done) {
    const int64_t n =
        static_cast<int64_t>(random.Next(client) % static_cast<uint64_t>(o.key_space));
    Put(c, client, KeyOf(n, o.key_size), value, leases[static_cast<size_t>(client)],
        std::move(done));
  });
  if (o.with_lease) RevokeMany(c, leases, std::min(o.clients, 64));
  return r;
}

Report RangeLoad(const Options& o, Connections& c) {
  const int64_t keys = std::min<int64_t>(o.key_space, 10000);
  const std::string value(static_cast<size_t>(o.value_size), 'x');
  RunLoad(LoadSpec{std::min(o.clients, 64), keys, 0, 0},
          [&, next = std::make_shared<std::atomic<int64_t>>(0)](int client, OpDone done) {
            Put(c, client, KeyOf(next->fetch_add(1), o.key_size), value, 0, std::move(done));
          });
  ClientRandom random(o.clients);
  Report r;
  r.load = RunLoad(SpecOf(o), [&](int client, OpDone done) {
    RangeRequest req;
    req.set_key(
        KeyOf(static_cast<int64_t>(random.Next(client) % static_cast<uint64_t>(keys)), o.key_size));
    req.set_serializable(o.serializable);
    Range(c, client, std::move(req), [done](const grpc::Status& s, const auto&) { done(s); });
  });
  return r;
}

// etcd's concurrency.Mutex, uncontended (one lock name per client by default): each cycle grants a
// session lease, takes the lock with a put-if-absent transaction, reads the owner, checks that the
// fencing token (the lock key's create_revision) is higher than any earlier holder's, then releases
// by deleting the key and revoking the lease.
Report TxnLockLoad(const Options& o, Connections& c) {
  const int locks = o.locks > 0 ? o.locks : o.clients;
  auto last_token = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(locks));
  auto holder = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(locks));
  for (int i = 0; i < locks; ++i) {
    last_token[i] = 0;
    holder[i] = -1;
  }
  std::atomic<int64_t> fencing_violations{0}, exclusion_violations{0}, not_acquired{0};
  // A contended hand-over is a chain: the holder's delete, its event at the next waiter, that
  // waiter's read of older keys. Timing the two legs says which one a change shortened. Without
  // errors only a lock's holder deletes a key, so the event a waiter gets ends the latest release
  // timed in released_at.
  const auto epoch = std::chrono::steady_clock::now();
  auto micros = [epoch] {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 epoch)
        .count();
  };
  auto released_at = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(locks));
  auto woken_at = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(o.clients));
  for (int i = 0; i < o.clients; ++i) woken_at[i] = 0;
  ShardedHistogram release_to_event, event_to_acquired;
  // Contended locks wait as etcd's Mutex does: on the deletion of the next older key, by watch.
  std::vector<std::unique_ptr<WatchClient>> watchers;
  if (locks < o.clients) {
    for (int i = 0; i < o.clients; ++i)
      watchers.push_back(std::make_unique<WatchClient>(c.watch(i)));
  }
  // Calls `acquired` once no key older than `my_rev` remains under `prefix`.
  std::function<void(int, std::string, int64_t, std::function<void(const grpc::Status&)>)>
      wait_deletes = [&](int client, std::string prefix, int64_t my_rev,
                         std::function<void(const grpc::Status&)> acquired) {
        RangeRequest older = ByCreateRevision(prefix, RangeRequest::DESCEND);
        older.set_max_create_revision(my_rev - 1);
        Range(c, client, older,
              [&, client, prefix, my_rev, acquired](const grpc::Status& s, const auto& resp) {
                const int64_t woken = woken_at[client].exchange(0);
                if (!s.ok()) return acquired(s);
                if (resp.kvs_size() == 0) {
                  if (woken != 0)
                    event_to_acquired.Record(static_cast<size_t>(client), micros() - woken);
                  return acquired(grpc::Status::OK);
                }
                etcdserverpb::WatchCreateRequest create;
                create.set_key(resp.kvs(0).key());
                // From the read's own revision, as etcd's waitDelete does (etcd then serves the
                // watcher from its unsynced group).
                create.set_start_revision(resp.header().revision());
                watchers[static_cast<size_t>(client)]->Watch(
                    create,
                    [&, client, prefix, my_rev, acquired](const etcdserverpb::WatchResponse& w) {
                      for (const auto& e : w.events()) {
                        if (e.type() == mvccpb::Event::DELETE) {
                          const int64_t now = micros();
                          release_to_event.Record(static_cast<size_t>(client),
                                                  now - released_at[client % locks].load());
                          woken_at[client] = now;
                          wait_deletes(client, prefix, my_rev, acquired);
                          return false;
                        }
                      }
                      return true;
                    });
              });
      };
  Report r;
  r.load = RunLoad(SpecOf(o), [&](int client, OpDone done) {
    const int lock = client % locks;
    Grant(c, client, 10, [&, client, lock, done](const grpc::Status& s, int64_t lease) {
      if (!s.ok()) return done(s);
      char hex[17];
      std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(lease));
      const std::string prefix = "bench-lock/" + std::to_string(lock) + "/";
      const std::string my_key = prefix + hex;
      etcdserverpb::TxnRequest txn;
      auto* cmp = txn.add_compare();
      cmp->set_key(my_key);
      cmp->set_target(Compare::CREATE);
      cmp->set_result(Compare::EQUAL);
      cmp->set_create_revision(0);
      auto* put = txn.add_success()->mutable_request_put();
      put->set_key(my_key);
      put->set_lease(lease);
      const RangeRequest owner = ByCreateRevision(prefix, RangeRequest::ASCEND);
      *txn.add_success()->mutable_request_range() = owner;
      txn.add_failure()->mutable_request_range()->set_key(my_key);
      *txn.add_failure()->mutable_request_range() = owner;
      Txn(c, client, std::move(txn),
          [&, client, lock, lease, prefix, my_key, done](const grpc::Status& s, const auto& resp) {
            if (!s.ok()) return done(s);
            const int64_t my_rev = resp.header().revision();
            const auto& owners = resp.responses(1).response_range();
            auto release = [&, client, lock, lease, my_key, done] {
              holder[lock].store(-1);
              released_at[lock] = micros();
              Delete(c, client, my_key, [&c, client, lease, done](const grpc::Status& s) {
                if (!s.ok()) return done(s);
                Revoke(c, client, lease, done);
              });
            };
            auto hold = [&, client, lock, my_rev, release](const grpc::Status& s) {
              if (!s.ok()) return release();
              // Mutual exclusion, and a fencing token above every earlier holder's.
              int expected = -1;
              if (!holder[lock].compare_exchange_strong(expected, client))
                exclusion_violations.fetch_add(1);
              int64_t prev = last_token[lock].load();
              while (prev < my_rev && !last_token[lock].compare_exchange_weak(prev, my_rev)) {
              }
              if (prev >= my_rev) fencing_violations.fetch_add(1);
              release();
            };
            if (!resp.succeeded() || owners.kvs_size() != 1) {
              not_acquired.fetch_add(1);
              release();
            } else if (owners.kvs(0).create_revision() == my_rev) {
              hold(grpc::Status::OK);
            } else if (!watchers.empty()) {
              wait_deletes(client, prefix, my_rev, hold);
            } else {
              not_acquired.fetch_add(1);
              release();
            }
          });
    });
  });
  for (auto& w : watchers) w->Close();
  for (auto& w : watchers) w->Wait();
  r.extras.emplace_back("fencing_violations", static_cast<double>(fencing_violations.load()));
  r.extras.emplace_back("exclusion_violations", static_cast<double>(exclusion_violations.load()));
  r.extras.emplace_back("not_acquired", static_cast<double>(not_acquired.load()));
  if (!watchers.empty()) {
    const Histogram to_event = release_to_event.Merged(), to_acquired = event_to_acquired.Merged();
    r.extras.emplace_back("handover_release_to_event_p50_us",
                          static_cast<double>(to_event.Percentile(50)));
    r.extras.emplace_back("handover_event_to_acquired_p50_us",
                          static_cast<double>(to_acquired.Percentile(50)));
  }
  return r;
}

// etcd's Lock RPC (v3lockpb), for clients without a lock recipe of their own: each client holds a
// lease granted at the start (longer than any run) and loops Lock, then Unlock of the key it got.
// Clients share --locks names (contended below --clients). Two holders of one name at once count
// as an exclusion violation: a client marks itself holder when Lock answers and unmarks before
// sending Unlock, so a correct server never lets the marks overlap.
Report LockRpcLoad(const Options& o, Connections& c) {
  const int locks = o.locks > 0 ? o.locks : o.clients;
  const std::vector<int64_t> leases = GrantMany(c, o.clients, 3600, std::min(o.clients, 64));
  auto holders = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(locks));
  for (int i = 0; i < locks; ++i) holders[i] = 0;
  std::atomic<int64_t> exclusion_violations{0};
  Report r;
  r.load = RunLoad(SpecOf(o), [&](int client, OpDone done) {
    const int lock = client % locks;
    v3lockpb::LockRequest request;
    request.set_name("rpc-lock/" + std::to_string(lock));
    request.set_lease(leases[static_cast<size_t>(client)]);
    auto* stub = c.lock(client);
    CallUnary<v3lockpb::LockRequest, v3lockpb::LockResponse>(
        [stub](auto* ctx, auto* rq, auto* rs, auto cb) {
          stub->async()->Lock(ctx, rq, rs, std::move(cb));
        },
        std::move(request),
        [&, lock, stub, done](const grpc::Status& s, const v3lockpb::LockResponse& locked) {
          if (!s.ok()) return done(s);
          if (holders[lock].fetch_add(1) != 0) exclusion_violations.fetch_add(1);
          holders[lock].fetch_sub(1);
          v3lockpb::UnlockRequest unlock;
          unlock.set_key(locked.key());
          CallUnary<v3lockpb::UnlockRequest, v3lockpb::UnlockResponse>(
              [stub](auto* ctx, auto* rq, auto* rs, auto cb) {
                stub->async()->Unlock(ctx, rq, rs, std::move(cb));
              },
              std::move(unlock),
              [done](const grpc::Status& s, const v3lockpb::UnlockResponse&) { done(s); });
        });
  });
  RevokeMany(c, leases, std::min(o.clients, 64));
  r.extras.emplace_back("exclusion_violations", static_cast<double>(exclusion_violations.load()));
  return r;
}

// Grants many short leases with one key each, then measures how long the server takes to make every
// key vanish, while an open-loop put load measures its own latency before and during the storm.
Report ExpiryStormLoad(const Options& o, Connections& c) {
  const std::string value(16, 'x');
  LoadSpec background{std::min(o.clients, 16), 0, 5.0, o.storm_put_rate};
  auto put_op = [&](int client, OpDone done) {
    static std::atomic<int64_t> n{0};
    Put(c, client, KeyOf(n.fetch_add(1) % 1000, 8, "storm-bg/"), value, 0, std::move(done));
  };
  LoadResult baseline = RunLoad(background, put_op);

  const auto granting = std::chrono::steady_clock::now();
  auto since_start_us = [granting] {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 granting)
        .count();
  };
  // When each lease's grant was sent: the server's deadline is at least that plus the TTL, so a
  // DELETE seen before it is a lease revoked early.
  std::vector<std::atomic<int64_t>> grant_sent_us(o.storm_leases);
  const int64_t ttl_us = o.storm_ttl * 1'000'000;
  // Deletions are observed as a client would, by watching the prefix from before the first grant
  // (a count over every key would itself hold up the writes being measured).
  std::atomic<int64_t> keys_written{std::numeric_limits<int64_t>::max()};
  std::atomic<bool> drained{false};
  std::atomic<int64_t> deleted{0}, drained_at_us{-1}, revoked_early{0}, most_early_us{0};
  auto note_deleted = [&](int64_t count) {
    if (deleted.fetch_add(count) + count >= keys_written.load() && !drained.exchange(true))
      drained_at_us = since_start_us();
  };
  WatchClient watcher(c.watch(0));
  etcdserverpb::WatchCreateRequest create;
  create.set_key("storm/");
  create.set_range_end("storm0");
  create.add_filters(etcdserverpb::WatchCreateRequest::NOPUT);
  std::promise<void> watching;
  watcher.Watch(
      create,
      [&](const etcdserverpb::WatchResponse& w) {
        const int64_t now_us = since_start_us();
        for (const auto& event : w.events()) {
          int64_t i = -1;
          if (absl::SimpleAtoi(absl::string_view(event.kv().key()).substr(6), &i) && i >= 0 &&
              i < o.storm_leases && now_us < grant_sent_us[i] + ttl_us) {
            revoked_early.fetch_add(1);
            const int64_t early = grant_sent_us[i] + ttl_us - now_us;
            for (int64_t m = most_early_us.load(); early > m;)
              most_early_us.compare_exchange_weak(m, early);
          }
        }
        if (w.events_size() > 0) note_deleted(w.events_size());
        return true;
      },
      [&watching] { watching.set_value(); });
  watching.get_future().wait();

  std::atomic<int64_t> next{0}, last_sent_us{0};
  LoadResult granted_load = RunLoad(
      LoadSpec{std::min(o.clients, 128), o.storm_leases, 0, 0}, [&](int client, OpDone done) {
        const int64_t i = next.fetch_add(1);
        grant_sent_us[i] = since_start_us();
        last_sent_us = grant_sent_us[i].load();
        Grant(c, client, o.storm_ttl, [&c, client, i, done](const grpc::Status& s, int64_t id) {
          if (!s.ok()) return done(s);
          Put(c, client, KeyOf(i, 8, "storm/"), "x", id, done);
        });
      });
  const double grant_phase_s = static_cast<double>(since_start_us()) / 1e6;
  keys_written = granted_load.ops - granted_load.error_count();
  note_deleted(0);  // in case the last deletion came before the count was known

  // The background puts run until the last key is gone, or the time allowed has passed.
  background.duration_s = o.storm_drain_timeout_s + static_cast<double>(o.storm_ttl);
  background.stop = &drained;
  LoadResult during = RunLoad(background, put_op);
  watcher.Close();
  watcher.Wait();
  // Leases fall due over the grant phase: from the first grant's TTL to the last one's. Not
  // drained within the time allowed, the share deleted by then tells how far it got (-1 s).
  const double drained_s = static_cast<double>(drained_at_us.load()) / 1e6;
  const double first_due_s = static_cast<double>(ttl_us) / 1e6;
  const double last_due_s = static_cast<double>(last_sent_us.load() + ttl_us) / 1e6;

  Report r;
  r.load = during;
  r.extras.emplace_back("leases", static_cast<double>(o.storm_leases));
  r.extras.emplace_back("grant_phase_s", grant_phase_s);
  r.extras.emplace_back("drain_s_after_first_deadline",
                        drained_s < 0 ? -1 : drained_s - first_due_s);
  r.extras.emplace_back("drain_s_after_last_deadline", drained_s < 0 ? -1 : drained_s - last_due_s);
  r.extras.emplace_back("deleted_share",
                        static_cast<double>(deleted.load()) /
                            static_cast<double>(std::max<int64_t>(1, keys_written)));
  r.extras.emplace_back("revoked_early", static_cast<double>(revoked_early.load()));
  r.extras.emplace_back("most_early_ms", static_cast<double>(most_early_us.load()) / 1000.0);
  r.extras.emplace_back("put_p99_ms_baseline",
                        static_cast<double>(baseline.latency.Percentile(99)) / 1000.0);
  r.extras.emplace_back("put_p99_ms_during_storm",
                        static_cast<double>(during.latency.Percentile(99)) / 1000.0);
  return r;
}

// --clients watch streams, one watcher each on one prefix; puts at --rate (default 10/s) carry
// their send time, so every delivered event measures put-to-watcher latency.
Report WatchFanoutLoad(const Options& o, Connections& c) {
  ShardedHistogram delivery;
  std::atomic<int64_t> delivered{0};
  std::atomic<int64_t> last_receipt_us{0};
  std::atomic<int> created{0};
  const auto epoch = std::chrono::steady_clock::now();
  auto now_us = [epoch] {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 epoch)
        .count();
  };
  std::vector<std::unique_ptr<WatchClient>> streams;
  const int per_stream = std::max(1, o.watchers_per_stream);
  for (int i = 0; i < o.clients; ++i) {
    if (i % per_stream == 0)
      streams.push_back(std::make_unique<WatchClient>(c.watch(i / per_stream)));
    etcdserverpb::WatchCreateRequest create;
    create.set_key("fanout/");
    create.set_range_end("fanout0");
    streams.back()->Watch(
        create,
        [&, i](const etcdserverpb::WatchResponse& w) {
          const int64_t at = now_us();
          for (const auto& e : w.events()) {
            delivery.Record(static_cast<size_t>(i), at - std::stoll(e.kv().value()));
            delivered.fetch_add(1, std::memory_order_relaxed);
          }
          int64_t seen = last_receipt_us.load(std::memory_order_relaxed);
          while (seen < at && !last_receipt_us.compare_exchange_weak(seen, at)) {
          }
          return true;
        },
        [&created] { created.fetch_add(1); });
  }
  while (created.load() < o.clients) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // With --writers, puts go as fast as the server takes them; otherwise one writer at --rate.
  const bool saturate = o.writers > 0;
  LoadSpec puts{saturate ? o.writers : 1, o.total, o.duration_s,
                saturate ? 0 : (o.rate > 0 ? o.rate : 10)};
  std::atomic<int64_t> n{0};
  const int64_t first_put_us = now_us();
  LoadResult put_load = RunLoad(puts, [&](int client, OpDone done) {
    Put(c, client, KeyOf(n.fetch_add(1) % 100, 4, "fanout/"), std::to_string(now_us()), 0,
        std::move(done));
  });
  const int64_t expected = put_load.ops * o.clients;
  // A saturated fan-out lags its writers: wait up to 15 s for the rest (5 s at a fixed rate).
  const int wait_ticks = saturate ? 1500 : 500;
  for (int i = 0; i < wait_ticks && delivered.load() < expected; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (auto& s : streams) s->Close();
  for (auto& s : streams) s->Wait();
  Report r;
  r.load.latency = delivery.Merged();
  r.load.ops = delivered.load();
  // At saturation the rate is events over the time from the first put to the last receipt, so
  // a server that falls behind its writers is not credited for events it delivers late.
  r.load.seconds = saturate && last_receipt_us.load() > first_put_us
                       ? static_cast<double>(last_receipt_us.load() - first_put_us) / 1e6
                       : put_load.seconds;
  r.load.errors = put_load.errors;
  r.extras.emplace_back("watchers", o.clients);
  r.extras.emplace_back("streams", static_cast<double>(streams.size()));
  r.extras.emplace_back("puts", static_cast<double>(put_load.ops));
  r.extras.emplace_back("writers", saturate ? o.writers : 0);
  r.extras.emplace_back("events_missing", static_cast<double>(expected - delivered.load()));
  return r;
}

}  // namespace

bool RunWorkload(const Options& o, Connections& c, Report* report, std::string* error) {
  report->workload = o.workload;
  if (o.workload == "lease-grant") {
    *report = LeaseGrantLoad(o, c);
  } else if (o.workload == "lease-keepalive") {
    auto ids = GrantMany(c, static_cast<int64_t>(o.clients) * o.leases_per_stream, o.ttl,
                         std::min(o.clients, 64));
    report->load = RunKeepAliveLoad(o, c, ids);
  } else if (o.workload == "lease-timetolive") {
    *report = TimeToLiveLoad(o, c);
  } else if (o.workload == "put") {
    *report = PutLoad(o, c);
  } else if (o.workload == "range") {
    *report = RangeLoad(o, c);
  } else if (o.workload == "txn-lock") {
    *report = TxnLockLoad(o, c);
  } else if (o.workload == "watch-fanout") {
    *report = WatchFanoutLoad(o, c);
  } else if (o.workload == "lock-rpc") {
    *report = LockRpcLoad(o, c);
  } else if (o.workload == "expiry-storm") {
    *report = ExpiryStormLoad(o, c);
  } else {
    *error = "unknown workload '" + o.workload + "'";
    return false;
  }
  report->workload = o.workload;
  return true;
}

}  // namespace leasehold::bench
