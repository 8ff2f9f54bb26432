#include "tests/faults/safety_checkers.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace leasehold::faults {
namespace {

std::string Ms(int64_t ns) { return absl::StrCat(ns / 1000000, " ms"); }

bool Present(const LeaseObservation& o, int64_t id) {
  return std::binary_search(o.present.begin(), o.present.end(), id);
}

// When an abandoned lease must be gone by, given the faults that may have held its revocation up.
int64_t LivenessDeadline(const LeaseLife& lease, int64_t last_renewal_sent,
                         const std::vector<FaultWindow>& faults, int64_t election_ns,
                         int64_t expiry_bound_ns) {
  const int64_t ttl_ns = lease.ttl_s * 1000000000;
  int64_t deadline = last_renewal_sent + ttl_ns + expiry_bound_ns;
  std::vector<FaultWindow> sorted = faults;
  std::sort(sorted.begin(), sorted.end(),
            [](const FaultWindow& a, const FaultWindow& b) { return a.start_ns < b.start_ns; });
  for (const FaultWindow& f : sorted) {
    if (f.start_ns > deadline) break;
    if (f.end_ns < last_renewal_sent) continue;
    deadline = std::max(deadline, f.end_ns + election_ns + ttl_ns + expiry_bound_ns);
  }
  return deadline;
}

}  // namespace

LeaseCheck CheckLeases(const std::vector<LeaseLife>& leases,
                       const std::vector<LeaseObservation>& observations,
                       const std::vector<FaultWindow>& faults, int64_t election_ns,
                       int64_t expiry_bound_ns) {
  LeaseCheck check;
  check.leases = static_cast<int64_t>(leases.size());
  check.observations = static_cast<int64_t>(observations.size());
  for (const LeaseLife& lease : leases) {
    if (lease.put_acked_ns < 0) continue;  // its key may never have existed
    std::vector<std::pair<int64_t, int64_t>> promises = lease.renewals;
    promises.emplace_back(lease.granted_sent_ns, lease.ttl_s);
    int64_t promised_until = 0, last_sent = lease.granted_sent_ns;
    for (const auto& [sent, ttl] : promises) {
      promised_until = std::max(promised_until, sent + ttl * 1000000000);
      last_sent = std::max(last_sent, sent);
    }
    int64_t gone_known_at = -1;  // after this, the key must never be seen
    if (lease.revoke_acked_ns >= 0) gone_known_at = lease.revoke_acked_ns;
    if (lease.gone_seen_ns >= 0 && (gone_known_at < 0 || lease.gone_seen_ns < gone_known_at)) {
      gone_known_at = lease.gone_seen_ns;
    }
    const int64_t liveness_deadline =
        lease.abandoned_ns >= 0
            ? LivenessDeadline(lease, last_sent, faults, election_ns, expiry_bound_ns)
            : -1;
    bool liveness_checked = false;
    for (const LeaseObservation& o : observations) {
      if (o.call_ns <= lease.put_acked_ns) continue;
      const bool present = Present(o, lease.id);
      const bool before_revoke = lease.revoke_sent_ns < 0 || o.return_ns < lease.revoke_sent_ns;
      if (!present && o.return_ns < promised_until && before_revoke) {
        check.anomalies.push_back(
            absl::StrCat("lease ", lease.id, ": its key was gone by ", Ms(o.return_ns),
                         ", but an acknowledged renewal promised it until ", Ms(promised_until)));
      }
      if (present && gone_known_at >= 0 && o.call_ns > gone_known_at) {
        check.anomalies.push_back(
            absl::StrCat("lease ", lease.id, ": its key was still there in a read at ",
                         Ms(o.call_ns), ", after the lease was known gone at ", Ms(gone_known_at)));
      }
      if (liveness_deadline >= 0 && o.call_ns > liveness_deadline) {
        liveness_checked = true;
        if (present) {
          check.anomalies.push_back(absl::StrCat("lease ", lease.id, " (TTL ", lease.ttl_s,
                                                 " s), not renewed since ", Ms(last_sent),
                                                 ", still had its key at ", Ms(o.call_ns),
                                                 ", past its deadline ", Ms(liveness_deadline)));
        }
      }
    }
    if (gone_known_at >= 0 || liveness_checked) ++check.revocations_checked;
  }
  return check;
}

FenceCheck CheckFencedRegister(const std::vector<FencedWrite>& writes,
                               const std::vector<AcceptedWrite>& log) {
  FenceCheck check;
  check.accepted = static_cast<int64_t>(log.size());
  std::vector<AcceptedWrite> ordered = log;
  std::sort(ordered.begin(), ordered.end(),
            [](const AcceptedWrite& a, const AcceptedWrite& b) { return a.revision < b.revision; });
  absl::flat_hash_map<int64_t, int> writer_of_token;
  absl::flat_hash_set<std::pair<int, int64_t>> in_log;
  for (size_t i = 0; i < ordered.size(); ++i) {
    const AcceptedWrite& w = ordered[i];
    if (!in_log.insert({w.client, w.seq}).second) {
      check.anomalies.push_back(absl::StrCat("client ", w.client, "'s write ", w.seq,
                                             " applied twice (again at revision ", w.revision,
                                             ")"));
    }
    if (i > 0 && w.token < ordered[i - 1].token) {
      check.anomalies.push_back(absl::StrCat("write of client ", w.client, " with token ", w.token,
                                             " accepted at revision ", w.revision, " after token ",
                                             ordered[i - 1].token, " (revision ",
                                             ordered[i - 1].revision, ")"));
    }
    auto [it, fresh] = writer_of_token.emplace(w.token, w.client);
    if (!fresh && it->second != w.client) {
      check.anomalies.push_back(absl::StrCat(
          "token ", w.token, " wrote for two clients: ", it->second, " and ", w.client));
    }
  }
  check.holders = static_cast<int64_t>(writer_of_token.size());
  for (const FencedWrite& w : writes) {
    const bool logged = in_log.contains({w.client, w.seq});
    if (w.outcome == FencedWrite::Outcome::kAccepted && !logged) {
      check.anomalies.push_back(
          absl::StrCat("client ", w.client, "'s write ", w.seq, " (token ", w.token,
                       ") was acknowledged as accepted but is not in the register's log"));
    }
    if (w.outcome == FencedWrite::Outcome::kRefused && logged) {
      check.anomalies.push_back(absl::StrCat("client ", w.client, "'s write ", w.seq, " (token ",
                                             w.token,
                                             ") was refused but is in the register's log"));
    }
    if (w.after_pause && w.outcome == FencedWrite::Outcome::kRefused) ++check.stale_refused;
  }
  return check;
}

BlobCheck CheckBlobLeases(const std::vector<BlobHolding>& holdings,
                          const std::vector<BlobWrite>& writes) {
  BlobCheck check;
  check.holdings = static_cast<int64_t>(holdings.size());
  std::vector<BlobHolding> by_start = holdings;
  std::sort(by_start.begin(), by_start.end(), [](const BlobHolding& a, const BlobHolding& b) {
    return a.acquired_ns < b.acquired_ns;
  });
  for (size_t i = 0; i < by_start.size(); ++i) {
    for (size_t j = i + 1;
         j < by_start.size() && by_start[j].acquired_ns < by_start[i].believed_until_ns; ++j) {
      if (by_start[j].client == by_start[i].client) continue;
      check.anomalies.push_back(
          absl::StrFormat("blob lease held by client %d (%s) from %.3f s until %.3f s overlaps "
                          "client %d's (%s) acquired at %.3f s",
                          by_start[i].client, by_start[i].lease_id, by_start[i].acquired_ns / 1e9,
                          by_start[i].believed_until_ns / 1e9, by_start[j].client,
                          by_start[j].lease_id, by_start[j].acquired_ns / 1e9));
    }
  }
  for (const BlobWrite& w : writes) {
    if (w.status == 201) ++check.writes_accepted;
    if (w.stale && w.status == 412) ++check.stale_refused;
    if (w.status != 201) continue;
    int64_t own_acquire = -1;
    for (const BlobHolding& h : by_start) {
      if (h.lease_id == w.lease_id) own_acquire = h.acquired_ns;
    }
    for (const BlobHolding& h : by_start) {
      if (h.lease_id != w.lease_id && h.acquired_ns > own_acquire && h.acquired_ns < w.call_ns) {
        check.anomalies.push_back(absl::StrFormat(
            "client %d's write with lease %s at %.3f s was accepted after client %d acquired lease "
            "%s at %.3f s",
            w.client, w.lease_id, w.call_ns / 1e9, h.client, h.lease_id, h.acquired_ns / 1e9));
        break;
      }
    }
  }
  return check;
}

std::vector<std::string> MissingAcknowledged(
    const std::vector<std::pair<std::string, int64_t>>& acked,
    const std::vector<std::string>& present, int64_t read_call_ns, const std::string& where) {
  const std::set<std::string> have(present.begin(), present.end());
  std::vector<std::string> anomalies;
  for (const auto& [key, acked_ns] : acked) {
    if (acked_ns < read_call_ns && !have.contains(key)) {
      anomalies.push_back(absl::StrCat("acknowledged write ", key, " (at ", Ms(acked_ns),
                                       ") missing from ", where));
    }
  }
  return anomalies;
}

bool SameEvent(const WatchedEvent& a, const WatchedEvent& b) {
  return a.revision == b.revision && a.key == b.key && a.put == b.put && a.value == b.value &&
         a.create_revision == b.create_revision && a.version == b.version &&
         a.has_prev == b.has_prev && a.prev_value == b.prev_value &&
         a.prev_mod_revision == b.prev_mod_revision;
}

namespace {

std::string Describe(const WatchedEvent& e) {
  return absl::StrFormat("%s of %s at revision %d", e.put ? "put" : "delete",
                         absl::CHexEscape(e.key), e.revision);
}

// The history's own consistency and completeness (see CheckWatches).
void CheckHistory(const std::vector<WatchedEvent>& history,
                  const std::map<std::string, std::string>& final_state,
                  std::vector<std::string>* anomalies) {
  struct Version {
    int64_t mod_revision, create_revision, version;
    std::string value;
  };
  absl::flat_hash_map<std::string, Version> live;
  int64_t last_revision = 0;
  constexpr size_t kMaxReported = 5;
  auto report = [&](std::string what) {
    if (anomalies->size() < kMaxReported) anomalies->push_back(std::move(what));
  };
  for (const WatchedEvent& e : history) {
    if (e.revision < last_revision)
      report(absl::StrCat("history: ", Describe(e), " comes after revision ", last_revision));
    last_revision = e.revision;
    auto it = live.find(e.key);
    const bool existed = it != live.end();
    if (e.has_prev != existed || (existed && (e.prev_value != it->second.value ||
                                              e.prev_mod_revision != it->second.mod_revision))) {
      report(absl::StrCat("history: the prev_kv of ", Describe(e),
                          " is not the key's previous version"));
    }
    if (!e.put) {
      if (!existed) report(absl::StrCat("history: ", Describe(e), " deletes no key"));
      live.erase(e.key);
      continue;
    }
    const int64_t version = existed ? it->second.version + 1 : 1;
    const int64_t created = existed ? it->second.create_revision : e.revision;
    if (e.version != version || e.create_revision != created) {
      report(absl::StrFormat("history: %s has version %d and create_revision %d, not %d and %d",
                             Describe(e), e.version, e.create_revision, version, created));
    }
    live[e.key] = {e.revision, e.create_revision, e.version, e.value};
  }
  for (const auto& [key, value] : final_state) {
    auto it = live.find(key);
    if (it == live.end()) {
      report(absl::StrCat("history: ", absl::CHexEscape(key),
                          " is in the store but the history deletes it or never puts it"));
    } else if (it->second.value != value) {
      report(absl::StrCat("history: ", absl::CHexEscape(key),
                          " ends with another value than the store's"));
    }
  }
  for (const auto& [key, version] : live) {
    if (!final_state.contains(key)) {
      report(absl::StrCat("history: ", absl::CHexEscape(key),
                          " is gone from the store without a delete event"));
    }
  }
}

}  // namespace

WatchCheck CheckWatches(const std::vector<WatchLog>& logs, const std::vector<WatchedEvent>& history,
                        const std::map<std::string, std::string>& final_state) {
  WatchCheck check;
  check.history_events = static_cast<int64_t>(history.size());
  CheckHistory(history, final_state, &check.anomalies);
  for (const WatchLog& log : logs) {
    check.streams += log.streams;
    // What this watcher asked for, as it must receive it.
    std::vector<WatchedEvent> wanted;
    for (const WatchedEvent& e : history) {
      if (log.filter.Matches(e)) wanted.push_back(log.filter.Shown(e));
    }
    // The next event the watcher must receive. After a first mismatch the rest of its log is out
    // of step with the history: one anomaly per watcher.
    size_t next = static_cast<size_t>(
        std::lower_bound(wanted.begin(), wanted.end(), log.start_revision,
                         [](const WatchedEvent& e, int64_t r) { return e.revision < r; }) -
        wanted.begin());
    const WatchLog::Item* previous_event = nullptr;
    for (const WatchLog::Item& item : log.items) {
      if (item.progress) {
        ++check.progress;
        if (next < wanted.size() && wanted[next].revision <= item.progress_revision) {
          check.anomalies.push_back(absl::StrFormat(
              "watcher %d: a progress notification at revision %d came before the %s", log.watcher,
              item.progress_revision, Describe(wanted[next])));
          break;
        }
        continue;
      }
      ++check.events;
      if (next >= wanted.size()) {
        check.anomalies.push_back(absl::StrFormat("watcher %d received a %s the history lacks",
                                                  log.watcher, Describe(item.event)));
        break;
      }
      if (!SameEvent(item.event, wanted[next])) {
        check.anomalies.push_back(absl::StrFormat(
            "watcher %d received the %s where the history has the %s next (a gap, a duplicate, "
            "a reordering or different contents)",
            log.watcher, Describe(item.event), Describe(wanted[next])));
        break;
      }
      if (previous_event != nullptr && previous_event->event.revision == item.event.revision &&
          previous_event->response != item.response) {
        check.anomalies.push_back(absl::StrFormat(
            "watcher %d received revision %d's events in two responses (not atomic)", log.watcher,
            item.event.revision));
        break;
      }
      previous_event = &item;
      ++next;
    }
  }
  return check;
}

}  // namespace leasehold::faults
