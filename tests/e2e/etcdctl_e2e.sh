#!/usr/bin/env bash
# Drives the real leasehold binary with Debian's etcdctl 3.4 and checks output and exit codes against
# what etcdctl prints for etcd 3.4 (shared/docs/etcdctl-outputs.md).
source "$(dirname "$0")/lib.sh"
e2e_plan 85
e2e_start_server
HEX='[0-9a-f]{16}'
# Member and cluster ids as etcdctl prints them (%16x: padded with spaces, not zeros).
ID16='[ 0-9a-f]{16}'

# --- lease grant ---
run_ctl lease grant 60
check_match "lease grant prints id and TTL" "^lease ($HEX) granted with TTL\(60s\)$" "$OUT"
ID=$(awk '{print $2}' <<<"$OUT")
run_ctl -w json lease grant 60
check_match "lease grant -w json" '^\{"cluster_id":[0-9]+,"member_id":[0-9]+,"revision":1,"raft_term":[0-9]+,"ID":[0-9]+,"TTL":60,"Error":""\}$' "$OUT"
run_ctl lease grant 0
check_match "TTL below the minimum is raised to 2s" "^lease $HEX granted with TTL\(2s\)$" "$OUT"
run_ctl lease grant 9000000000
check_match "maximum TTL accepted" "granted with TTL\(9000000000s\)$" "$OUT"
run_ctl lease grant 9000000001
check "TTL above the maximum: exit 1" 1 "$RC"
check "TTL above the maximum: message" "Error: failed to grant lease (etcdserver: too large lease TTL)" "$ERR"

# --- put with a lease ---
P=/e2e-$$
run_ctl put "$P/k1" v1 --lease="$ID"; check "put --lease" "OK" "$OUT"
run_ctl put "$P/k2" v2 --lease="$ID"
run_ctl put "$P/k3" v3 --lease="$ID"
run_ctl put "$P/k4" v4 --lease=1234abcd
check "put with unknown lease: exit 1" 1 "$RC"
check "put with unknown lease: message" "Error: etcdserver: requested lease not found" "$ERR"
run_ctl get "$P/k4"; check "failed put wrote nothing" "" "$OUT"
run_ctl -w json get "$P/k1"
check_match "get -w json shows the lease" "\"create_revision\":2,\"mod_revision\":2,\"version\":1,\"value\":\"djE=\",\"lease\":[0-9]+\}\],\"count\":1\}$" "$OUT"
run_ctl put "$P/k1" v1b --prev-kv
check "put --prev-kv" "$(printf 'OK\n%s\nv1' "$P/k1")" "$OUT"

# --- lease timetolive --- (a few seconds of the 60 s have gone by the checks on a busy machine)
run_ctl lease timetolive "$ID"
check_match "timetolive" "^lease $ID granted with TTL\(60s\), remaining\((5[5-9]|60)s\)$" "$OUT"
run_ctl lease timetolive "$ID" --keys
check_match "timetolive --keys (k1 was re-put without a lease)" "^lease $ID granted with TTL\(60s\), remaining\((5[5-9]|60)s\), attached keys\(\[$P/k2 $P/k3\]\)$" "$OUT"
run_ctl -w json lease timetolive "$ID" --keys
check_match "timetolive -w json --keys" '"granted-ttl":60,"keys":\["[A-Za-z0-9+/=]+","[A-Za-z0-9+/=]+"\]\}$' "$OUT"
run_ctl lease timetolive 1234abcd
check "timetolive of an unknown lease" "lease 000000001234abcd already expired" "$OUT"
check "timetolive of an unknown lease: exit 0" 0 "$RC"
run_ctl -w json lease timetolive 1234abcd
check_match "timetolive unknown -w json" '"id":305441741,"ttl":-1,"granted-ttl":0,"keys":null\}$' "$OUT"

# --- lease list ---
run_ctl lease list
# The 2 s lease from "grant 0" may have expired by now: 3 or 4 leases remain.
check_match "lease list header" "^found [34] leases" "$OUT"
check_match "lease list has the id" "$ID" "$OUT"

# --- keep-alive ---
run_ctl lease keep-alive --once "$ID"
check "keep-alive --once" "lease $ID keepalived with TTL(60)" "$OUT"
run_ctl lease keep-alive --once 1234abcd
check "keep-alive --once unknown: exit 2" 2 "$RC"
check "keep-alive --once unknown: message" "Error: etcdserver: requested lease not found" "$ERR"
OUT=$(timeout 3 etcdctl --endpoints="$EP" lease keep-alive "$ID" 2>/dev/null)
check_match "keep-alive streams renewals" "^lease $ID keepalived with TTL\(60\)" "$OUT"
OUT=$(timeout 5 etcdctl --endpoints="$EP" lease keep-alive 1234abcd 2>/dev/null); RC=$?
check "keep-alive of an unknown lease ends" "lease 000000001234abcd expired or revoked." "$OUT"
check "keep-alive of an unknown lease: exit 0" 0 "$RC"
SHORT=$(ctl lease grant 2 | awk '{print $2}')
OUT=$(timeout 5 etcdctl --endpoints="$EP" lease keep-alive "$SHORT" 2>/dev/null)
LINES=$(grep -c "keepalived with TTL(2)" <<<"$OUT")
if [ "$LINES" -ge 3 ]; then pass "a 2 s lease is renewed every TTL/3 ($LINES renewals in 5 s)"; else fail "2 s lease renewals" "$OUT"; fi

# --- revoke ---
run_ctl lease revoke "$ID"; check "lease revoke" "lease $ID revoked" "$OUT"
run_ctl get "$P/k2"; check "revoke deleted the keys" "" "$OUT"
run_ctl get "$P/k1"; check "a key moved off the lease survives" "$(printf '%s\nv1b' "$P/k1")" "$OUT"
run_ctl lease revoke "$ID"
check "second revoke: exit 1" 1 "$RC"
check "second revoke: message" "Error: failed to revoke lease (etcdserver: requested lease not found)" "$ERR"
run_ctl lease timetolive "$ID" --keys; check "revoked lease already expired" "lease $ID already expired" "$OUT"

# --- expiry ---
EXP=$(ctl lease grant 2 | awk '{print $2}')
ctl put "$P/exp" x --lease="$EXP" >/dev/null
sleep 3.5
run_ctl lease timetolive "$EXP"; check "expired lease" "lease $EXP already expired" "$OUT"
run_ctl get "$P/exp"; check "expired lease took its key" "" "$OUT"

# --- get options ---
Q=/q-$$
for k in c a b d; do ctl put "$Q/$k" "val-$k" >/dev/null; done
run_ctl get "$Q/" --prefix --keys-only
check "get --prefix --keys-only" "$(printf '%s/a\n\n%s/b\n\n%s/c\n\n%s/d\n' "$Q" "$Q" "$Q" "$Q")" "$OUT"
run_ctl get "$Q/a" "$Q/c" --print-value-only
check "get range --print-value-only" "$(printf 'val-a\nval-b')" "$OUT"
run_ctl get "$Q/" --prefix --limit=2 --print-value-only
check "get --limit" "$(printf 'val-a\nval-b')" "$OUT"
run_ctl get "$Q/" --prefix --sort-by=CREATE --order=DESCEND --print-value-only
check "get --sort-by=CREATE --order=DESCEND" "$(printf 'val-d\nval-b\nval-a\nval-c')" "$OUT"
REV=$(ctl -w json get "$Q/a" | python3 -c 'import json,sys; print(json.load(sys.stdin)["kvs"][0]["mod_revision"])')
ctl put "$Q/a" changed >/dev/null
run_ctl get "$Q/a" --rev="$REV" --print-value-only; check "get --rev" "val-a" "$OUT"
run_ctl -w json get "$Q/" --prefix --limit=1
check_match "get -w json more and count" '"more":true,"count":4\}$' "$OUT"

# --- del ---
run_ctl del "$Q/a" --prev-kv; check "del --prev-kv" "$(printf '1\n%s/a\nchanged' "$Q")" "$OUT"
run_ctl del "$Q/" --prefix; check "del --prefix" "3" "$OUT"
run_ctl del "$Q/none"; check "del of a missing key" "0" "$OUT"

# --- txn ---
ctl put t1 1 >/dev/null
OUT=$(printf 'val("t1") = "1"\nver("t1") = "1"\nc("t1") > "0"\nm("t1") > "0"\n\nput t1 2\n\nget t1\n\n' | ctl txn)
check "txn success branch" "$(printf 'SUCCESS\n\nOK')" "$OUT"
OUT=$(printf 'val("t1") = "1"\n\nput t1 3\n\nget t1\n\n' | ctl txn)
check "txn failure branch" "$(printf 'FAILURE\n\nt1\n2')" "$OUT"
OUT=$(printf 'c("missing-key") = "0"\n\nput missing-key new\n\n\n' | ctl -w json txn)
check_match "txn -w json" '"succeeded":true,"responses":\[\{"Response":\{"ResponsePut":\{"header":\{"revision":[0-9]+\}\}\}\}\]\}$' "$OUT"

# --- compaction ---
CUR=$(ctl -w json get t1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])')
run_ctl compaction "$((CUR - 1))"; check "compaction" "compacted revision $((CUR - 1))" "$OUT"
run_ctl compaction "$((CUR - 1))"
check "compaction twice: message" "Error: etcdserver: mvcc: required revision has been compacted" "$ERR"
run_ctl compaction "$((CUR + 100))"
check "compaction in the future: message" "Error: etcdserver: mvcc: required revision is a future revision" "$ERR"
run_ctl get t1 --rev=2
check "get below the compaction" "Error: etcdserver: mvcc: required revision has been compacted" "$ERR"
# etcd reads a negative start revision as one before the first: compacted away by now.
timeout 10 etcdctl --endpoints="$EP" watch "$P/k1" --rev -1 >"$E2E_DIR/watch.out" 2>&1; RC=$?
check "watch from a negative revision after a compaction" \
  "$(printf 'watch was canceled (etcdserver: mvcc: required revision has been compacted)\nError: watch is canceled by the server')" \
  "$(grep -v '"level":"warn"' "$E2E_DIR/watch.out")"
check "watch from a negative revision: exit 5" 5 "$RC"

# --- status, health, members ---
run_ctl endpoint status
check_match "endpoint status" "^$EP, [0-9a-f]+, 3\.4\.23, [0-9.]+ k?B, true, false, [0-9]+, [0-9]+, [0-9]+, $" "$OUT"
run_ctl -w json endpoint status
check_match "endpoint status -w json" '"version":"3.4.23","dbSize":[0-9]+,"leader":[0-9]+,"raftIndex":[0-9]+,"raftTerm":[0-9]+,"raftAppliedIndex":[0-9]+' "$OUT"
OUT=$(ctl endpoint health 2>&1 >/dev/null); RC=$?
check_match "endpoint health (stderr)" "^$EP is healthy: successfully committed proposal: took = " "$OUT"
run_ctl member list
check_match "member list" "^[0-9a-f]+, started, e2e, http://127.0.0.1:$PEER_PORT, http://$EP, false$" "$OUT"
run_ctl -w json member list
check_match "member list -w json" '"members":\[\{"ID":[0-9]+,"name":"e2e","peerURLs":\["http://127.0.0.1:'"$PEER_PORT"'"\],"clientURLs":\["http://'"$EP"'"\]\}\]\}$' "$OUT"

# --- membership changes that would cost the cluster its quorum are refused, as etcd refuses them ---
SELF=$(ctl member list | cut -d, -f1)
run_ctl member remove "$SELF"
check "the last member cannot be removed" "Error: etcdserver: re-configuration failed due to not enough started members" "$ERR"
run_ctl member add learner1 --peer-urls=http://127.0.0.1:1 --learner
check_match "a learner is added" "^Member $ID16 added to cluster $ID16" "$OUT"
LEARNER=$(ctl member list | grep 'http://127.0.0.1:1,' | cut -d, -f1)
run_ctl member add learner2 --peer-urls=http://127.0.0.1:2 --learner
check "one learner at a time" "Error: etcdserver: too many learner members in cluster" "$ERR"
run_ctl member promote "$LEARNER"
check "a learner that never started is not promoted" \
  "Error: etcdserver: can only promote a learner member which is in sync with leader" "$ERR"
run_ctl member remove "$LEARNER"; check_match "the learner is removed" "^Member $LEARNER removed" "$OUT"
run_ctl member list; check "one member again" 1 "$(wc -l <<<"$OUT")"

# --- bad input: the right error, and the server keeps serving ---
run_ctl put "" x; check "empty key" "Error: etcdserver: key is not provided" "$ERR"
head -c 1700000 /dev/zero | tr '\0' 'a' > "$E2E_DIR/big"
OUT=$(ctl put big < "$E2E_DIR/big" 2>&1 | grep -v '"level":"warn"')
check "request over --max-request-bytes" "Error: etcdserver: request is too large" "$OUT"
head -c 3000000 /dev/zero | tr '\0' 'a' > "$E2E_DIR/huge"
OUT=$(ctl put huge < "$E2E_DIR/huge" 2>&1 | grep -v '"level":"warn"')
check_match "request over the gRPC limit" "^Error: rpc error: code = ResourceExhausted" "$OUT"
OPS=$(for i in $(seq 1 129); do echo "put many$i x"; done)
OUT=$(printf '\n%s\n\n\n' "$OPS" | ctl txn 2>&1 | grep -v '"level":"warn"')
check "txn with 129 operations" "Error: etcdserver: too many operations in txn request" "$OUT"
OUT=$(printf '\nput dup 1\nput dup 2\n\n\n' | ctl txn 2>&1 | grep -v '"level":"warn"')
check "txn with a duplicate key" "Error: etcdserver: duplicate key given in txn request" "$OUT"
run_ctl lease grant 10 ; check_match "still serving after bad input" "granted with TTL\(10s\)" "$OUT"

# etcdctl's own check reads the server's process_resident_memory_bytes from /metrics.
run_ctl check datascale
check_match "check datascale" "^PASS: Approximate system memory used : [0-9.]+ MB\.$" "$(grep PASS <<<"$OUT")"

# Like etcd, a member opens only the ports it is given: a second member beside this one, not given
# --listen-blob-urls, listens on its client and peer ports alone, and can have the storage
# emulator's port 10000 as its client port (when nothing else on this machine holds it).
P2=$(python3 -c 'import socket
s = socket.socket()
try:
    s.bind(("127.0.0.1", 10000)); print(10000)
except OSError:
    print(0)')
[ "$P2" = 10000 ] || P2=$(free_port)
PP2=$(free_port)
"$LEASEHOLD_BIN" --name second --data-dir "$E2E_DIR/second" --listen-client-urls "http://127.0.0.1:$P2" \
  --listen-peer-urls "http://127.0.0.1:$PP2" --initial-advertise-peer-urls "http://127.0.0.1:$PP2" \
  --initial-cluster "second=http://127.0.0.1:$PP2" >"$E2E_DIR/second.log" 2>&1 &
SECOND=$!
for _ in $(seq 1 100); do timeout 5 etcdctl --endpoints="127.0.0.1:$P2" put second v >/dev/null 2>&1 && break; sleep 0.1; done
LISTENING=$(ss -ltnpH | grep "pid=$SECOND," | awk '{print $4}' | sed 's/.*://' | sort -n | tr '\n' ' ')
check "a member without --listen-blob-urls listens on its client and peer ports only" \
  "$(printf '%s\n' "$P2" "$PP2" | sort -n | tr '\n' ' ')" "$LISTENING"
check "and serves" OK "$(timeout 5 etcdctl --endpoints="127.0.0.1:$P2" put second v 2>&1)"
kill "$SECOND"; wait "$SECOND" 2>/dev/null
BLOB_TAKEN=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[2]))); s.listen()
open(sys.argv[1], "w").close()
time.sleep(30)' "$E2E_DIR/holding" "$BLOB_TAKEN" &
HOLDER=$!
for _ in $(seq 1 100); do [ -e "$E2E_DIR/holding" ] && break; sleep 0.1; done
"$LEASEHOLD_BIN" --name third --data-dir "$E2E_DIR/third" --listen-client-urls "http://127.0.0.1:$P2" \
  --listen-peer-urls "http://127.0.0.1:$PP2" --initial-advertise-peer-urls "http://127.0.0.1:$PP2" \
  --initial-cluster "third=http://127.0.0.1:$PP2" --listen-blob-urls "http://127.0.0.1:$BLOB_TAKEN" >"$E2E_DIR/third.log" 2>&1
check "a blob port that is taken stops the start" 1 "$?"
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null
# etcd's --logger and --log-outputs: the lines go to a file and stdout, none to stderr.
"$LEASEHOLD_BIN" --name fourth --data-dir "$E2E_DIR/fourth" --listen-client-urls "http://127.0.0.1:$P2" \
  --listen-peer-urls "http://127.0.0.1:$PP2" --initial-advertise-peer-urls "http://127.0.0.1:$PP2" \
  --initial-cluster "fourth=http://127.0.0.1:$PP2" --logger=zap --pre-vote --max-wals 5 --experimental-warning-apply-duration 1us \
  --log-outputs "$E2E_DIR/fourth-file.log,stdout" >"$E2E_DIR/fourth.out" 2>"$E2E_DIR/fourth.err" &
FOURTH=$!
for _ in $(seq 1 100); do grep -q '"msg":"ready to serve client requests"' "$E2E_DIR/fourth-file.log" 2>/dev/null && break; sleep 0.1; done
kill "$FOURTH"; wait "$FOURTH" 2>/dev/null
check "--log-outputs: the file has the log" 1 "$(grep -c '"msg":"ready to serve client requests"' "$E2E_DIR/fourth-file.log")"
check "and so has stdout" 1 "$(grep -c '"msg":"ready to serve client requests"' "$E2E_DIR/fourth.out")"
check "and stderr nothing" "" "$(cat "$E2E_DIR/fourth.err")"
OUT=$("$LEASEHOLD_BIN" --data-dir "$E2E_DIR/v2" --enable-v2 2>&1); RC=$?
check "--enable-v2 stops the start (no v2 API)" "2 leasehold: --enable-v2: etcd's v2 API is not served (only v3)" "$RC $OUT"
OUT=$("$LEASEHOLD_BIN" --data-dir "$E2E_DIR/pprof" --enable-pprof 2>&1); RC=$?
check "--enable-pprof stops the start too (no Go profiler)" 2 "$RC"
check_match "--experimental-warning-apply-duration: slower applies are logged as etcd logs them" \
  '"msg":"apply request took too long","took":"[0-9.]+(ms|µs|ns|s)","expected-duration":"1µs","prefix":"","request":"member_publish"' \
  "$(cat "$E2E_DIR/fourth-file.log")"
check "--max-wals is accepted and said to have no effect" 1 "$(grep -c '"msg":"--max-wals has no effect' "$E2E_DIR/fourth.err" "$E2E_DIR/fourth-file.log" | awk -F: '{s += $2} END {print s}')"
# Every log line is one JSON object (etcd's zap format), whatever its text holds (an apostrophe here).
check "the logs are JSON, line by line" ok "$(python3 -c 'import json, sys
for path in sys.argv[1:]:
    for line in open(path):
        if line.startswith("{"): json.loads(line)
print("ok")' "$E2E_DIR/second.log" "$E2E_DIR/third.log" "$E2E_DIR/server.log" 2>&1 | tail -1)"

# Once its publish applies, the server logs etcd's own lines for that moment, which tools that start
# etcd wait for (etcd's end-to-end framework waits for the first two).
for line in "published local member to cluster through raft" "enabled capabilities for version" \
  "ready to serve client requests"; do
  check "the log says \"$line\"" 1 "$(grep -c "\"msg\":\"$line\"" "$E2E_DIR/server.log")"
done

e2e_finish
