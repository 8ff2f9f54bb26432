"""One scenario through Debian's python3-etcd3 (0.12) client, printed as JSON.

usage: python_etcd3_scenario.py host:port

python_etcd3_e2e.sh runs it against etcd 3.4 and against Leasehold, each fresh, and compares the
two outputs: the same calls in the same order give the same revisions, values, events and errors.
Only what differs between two servers by nature is left out (lease and member ids, raft terms,
sizes, and the values of Maintenance.Hash and of a snapshot's hash, which hash each server's own
storage).

Each check records a value or "error: <type> <details>"; a check that fails on etcd too (a bug of
this client version) is still compared, and the test counts how many succeeded on etcd so the
comparison cannot pass vacuously.
"""
import json
import subprocess
import sys
import tempfile
import time

import etcd3
import etcd3.etcdrpc as etcdrpc
from etcd3 import utils

host, port = sys.argv[1].rsplit(":", 1)
client = etcd3.client(host=host, port=int(port), timeout=10)
results = {}


def check(name, fn):
    try:
        results[name] = fn()
    except Exception as e:  # the error itself is what gets compared
        details = e.details() if hasattr(e, "details") and callable(e.details) else str(e)
        results[name] = "error: %s %s" % (type(e).__name__, details)


def key_values(pairs):
    return [(meta.key.decode(), value.decode()) for value, meta in pairs]


def events_of(response):
    return [(type(e).__name__, e.key.decode(), e.value.decode()) for e in response.events]


check("get of a missing key", lambda: list(client.get("missing")))
check("put revision", lambda: client.put("/kv/a", "1").header.revision)
check("put prev_kv", lambda: client.put("/kv/a", "2", prev_kv=True).prev_kv.value.decode())
check("put_if_not_exists twice", lambda: [client.put_if_not_exists("/kv/b", "x"), client.put_if_not_exists("/kv/b", "x")])
check("replace", lambda: [client.replace("/kv/a", "2", "3"), client.replace("/kv/a", "2", "4"), client.get("/kv/a")[0].decode()])
check("delete", lambda: [client.delete("/kv/b"), client.delete("/kv/b"), client.delete("/kv/never")])
check("delete prev_kv", lambda: [kv.value.decode() for kv in client.delete("/kv/a", prev_kv=True, return_response=True).prev_kvs])


def prefix_and_sort():
    for k, v in zip("abcde", "qwert"):
        client.put("/sort/" + k, v)
    return [key_values(client.get_prefix("/sort/", sort_order="ascend")),
            key_values(client.get_prefix("/sort/", sort_order="descend")),
            key_values(client.get_prefix("/sort/", sort_order="ascend", sort_target="value")),
            key_values(client.get_range("/sort/b", "/sort/d")),
            len(list(client.get_all()))]


check("prefix, range and sort", prefix_and_sort)
check("delete_prefix", lambda: client.delete_prefix("/sort/").deleted)


def transactions():
    client.put("/txn/k", "v")
    t = client.transactions
    ok, responses = client.transaction(
        compare=[t.value("/txn/k") == "v", t.version("/txn/k") == 1, t.create("/txn/k") > 0, t.mod("/txn/k") < 1000],
        success=[t.put("/txn/k", "success"), t.get("/txn/k")],
        failure=[t.put("/txn/k", "failure")])
    failed, _ = client.transaction(compare=[t.value("/txn/k") == "v"], success=[], failure=[t.delete("/txn/k")])
    return [ok, [kv.decode() for kv, _ in responses[1]], failed, client.get("/txn/k")[0]]


check("transactions", transactions)


def watch_history():
    first = client.put("/w/k", "0").header.revision
    client.put("/w/k", "1")
    client.delete("/w/k")
    iterator, cancel = client.watch_response("/w/k", start_revision=first)
    live = next(iterator)
    cancel()
    once = client.watch_once_response("/w/k", start_revision=first)
    return [live.header.revision - first, events_of(live), events_of(once)]


check("watch from an earlier revision", watch_history)


def watch_live_prefix_with_prev_kv():
    events = []
    watch_id = client.add_watch_callback("/live/", lambda r: events.extend(r.events),
                                         range_end=utils.increment_last_byte(b"/live/"), prev_kv=True)
    client.put("/live/0", "0")
    client.put("/live/1", "1")
    client.put("/live/1", "2")
    client.delete("/live/1")
    client.put("/other", "x")
    deadline = time.time() + 5
    while len(events) < 4 and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # a stray event would arrive by now
    client.cancel_watch(watch_id)
    return [(type(e).__name__, e.key.decode(), e.value.decode(), e.prev_value.decode() if e.prev_value else None)
            for e in events]


check("watch a prefix, prev_kv", watch_live_prefix_with_prev_kv)


def compaction():
    current = client.put("/c/k", "x").header.revision
    client.compact(current - 1)
    iterator, cancel = client.watch("/c/k", start_revision=1)
    try:
        next(iterator)
        outcome = "no error"
    except etcd3.exceptions.RevisionCompactedError as e:
        outcome = ["compacted at", e.compacted_revision - current]
    cancel()
    return outcome


check("watch from a compacted revision", compaction)
check("compact below the compacted revision", lambda: client.compact(2))


def leases():
    lease = client.lease(1)
    out = [type(lease.id).__name__, lease.granted_ttl, lease.keys]
    client.put("/lease/k", "v", lease=lease)
    out += [[k.decode() for k in lease.keys], lease.remaining_ttl <= lease.granted_ttl]
    time.sleep(lease.granted_ttl + 2)
    out.append(client.get("/lease/k")[0])
    out.append(lease.remaining_ttl)
    other = client.lease(30)
    out.append(other.refresh()[0].TTL)
    other.revoke()
    out.append(other.remaining_ttl)
    return out


check("leases: grant, keys, expiry, refresh, revoke", leases)

# Asked at once, a fresh lease has less than its TTL left: etcd says TTL-1 every time.
check("time to live right after granting", lambda: sorted({client.lease(10).remaining_ttl for _ in range(50)}))


def locks():
    lock = client.lock("py-lock", ttl=3)
    out = [lock.is_acquired(), lock.acquire(), lock.is_acquired(), client.get(lock.key)[0] is not None]
    out.append(lock.release())
    out.append(client.get(lock.key)[0])
    with client.lock("py-lock-2", ttl=3) as held:
        out.append(held.is_acquired())
    out.append(held.is_acquired())
    expiring = client.lock("py-lock-3", ttl=3)
    out.append(expiring.acquire())
    time.sleep(6)  # its lease ends: etcd's minimum TTL, plus the expiry's bound
    out.append(client.get(expiring.key)[0])
    return out


check("locks: acquire, release, expiry", locks)


def cluster():
    status = client.status()
    members = list(client.members)
    return [status.version, status.leader.id == members[0].id, len(members),
            [len(m.client_urls) for m in members], [len(m.peer_urls) for m in members]]


check("status and members", cluster)


def alarms():
    member = next(client.members)
    raised = client.create_alarm()
    client.create_alarm(member_id=member.id)
    listed = sorted(a.member_id == member.id for a in client.list_alarms())
    client.disarm_alarm(member_id=member.id)
    after = list(client.list_alarms())
    client.disarm_alarm()  # the one raised for member 0
    return [[(a.member_id, etcdrpc.AlarmType.Name(a.alarm_type)) for a in raised], listed, len(after),
            len(list(client.list_alarms())), client.put("/after-alarms", "x").header.revision > 0]


check("alarms", alarms)
check("defragment", lambda: type(client.defragment()).__name__)
check("hash is a number", lambda: isinstance(client.hash(), int))


def snapshot():
    # As the client's own test suite does: fetch a snapshot, then have etcdctl read it.
    with tempfile.NamedTemporaryFile() as f:
        client.snapshot(f)
        f.flush()
        out = subprocess.run(["etcdctl", "snapshot", "status", f.name, "-w", "json"], env={"ETCDCTL_API": "3"},
                             capture_output=True, text=True)
        if out.returncode != 0:
            return "error: etcdctl " + out.stderr.strip()
        status = json.loads(out.stdout)
        return [status["revision"], client.get("/after-alarms")[1].mod_revision <= status["revision"]]


check("snapshot read by etcdctl snapshot status", snapshot)
print(json.dumps(results, indent=1, sort_keys=True, default=str))
