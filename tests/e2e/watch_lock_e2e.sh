#!/usr/bin/env bash
# Watch, lock and election through Debian's etcdctl 3.4: output as etcd 3.4 prints it, revocations as
# one DELETE event per key in one response, history and compaction, and lock hand-over by watch.
source "$(dirname "$0")/lib.sh"
e2e_plan 19
e2e_start_server
W="$E2E_DIR/w"

# --- watch --prefix --prev-kv, and a revoke's deletes ---
(timeout 4 etcdctl --endpoints="$EP" watch --prefix s/ --prev-kv >"$W.1" 2>&1 &)
(timeout 4 etcdctl --endpoints="$EP" -w json watch --prefix s/ >"$W.json" 2>&1 &)
sleep 0.5
ID=$(ctl lease grant 30 | awk '{print $2}')
ctl put s/b 1 --lease="$ID" >/dev/null
ctl put s/a 2 --lease="$ID" >/dev/null
ctl put s/b 3 --lease="$ID" >/dev/null
ctl lease revoke "$ID" >/dev/null
sleep 3.8
check "watch --prefix --prev-kv output" "$(printf 'PUT\ns/b\n1\nPUT\ns/a\n2\nPUT\ns/b\n1\ns/b\n3\nDELETE\ns/a\n2\ns/a\n\nDELETE\ns/b\n3\ns/b\n')" "$(cat "$W.1")"
LAST=$(tail -1 "$W.json")
check_match "a revoke's deletes arrive in one response, one revision, sorted" \
  '"Events":\[\{"type":1,"kv":\{"key":"cy9h","mod_revision":([0-9]+)\}\},\{"type":1,"kv":\{"key":"cy9i","mod_revision":\1\}\}\]' "$LAST"

# --- history from a past revision, and a compacted one ---
ctl put h 1 >/dev/null
REV=$(ctl -w json get h | python3 -c 'import json,sys; print(json.load(sys.stdin)["kvs"][0]["mod_revision"])')
ctl put h 2 >/dev/null
OUT=$(timeout 2 etcdctl --endpoints="$EP" watch h --rev="$REV" 2>&1)
check "watch --rev replays history" "$(printf 'PUT\nh\n1\nPUT\nh\n2')" "$OUT"
ctl compaction "$((REV + 1))" >/dev/null
OUT=$(timeout 3 etcdctl --endpoints="$EP" watch h --rev="$REV" 2>&1); RC=$?
check "watch below the compaction: message" "$(printf 'watch was canceled (etcdserver: mvcc: required revision has been compacted)\nError: watch is canceled by the server')" "$OUT"
check "watch below the compaction: exit 5" 5 "$RC"

# --- interactive watch ---
OUT=$( (echo "watch i --prev-kv"; sleep 1; ctl put i v >/dev/null; sleep 0.5) | timeout 3 etcdctl --endpoints="$EP" watch -i 2>&1 |
  grep -v "Error reading watch request line: EOF")  # etcdctl's own complaint when stdin ends
check "watch -i" "$(printf 'PUT\ni\nv')" "$OUT"

# --- lock: one holder at a time, hand-over by watch ---
L="$E2E_DIR/lock"
etcdctl --endpoints="$EP" lock a >"$L.1" 2>&1 & P1=$!
sleep 0.7
etcdctl --endpoints="$EP" lock a >"$L.2" 2>&1 & P2=$!
sleep 0.5
check_match "first locker holds the lock" "^a/[0-9a-f]+$" "$(head -1 "$L.1")"
check "second locker waits" "" "$(cat "$L.2")"
START=$(date +%s%N)
kill -INT "$P1"; wait "$P1"; RC=$?
check "holder exits 0 on SIGINT" 0 "$RC"
for _ in $(seq 1 100); do [ -s "$L.2" ] && break; sleep 0.01; done
MS=$(( ($(date +%s%N) - START) / 1000000 ))
if [ -s "$L.2" ] && [ "$(head -1 "$L.2")" != "$(head -1 "$L.1")" ]; then pass "waiter takes over (${MS} ms)"; else fail "waiter takes over" "$(cat "$L.2")"; fi
kill -INT "$P2"; wait "$P2"
OUT=$(ctl lock b -- sh -c 'echo "$ETCD_LOCK_KEY" "$ETCD_LOCK_REV"')
check_match "lock runs a command with ETCD_LOCK_KEY and ETCD_LOCK_REV" "^b/[0-9a-f]+ [0-9]+$" "$OUT"
OUT=$(ctl lock b -- sh -c 'exit 3' 2>&1); RC=$?
check "lock passes on the command's failure" "1 Error: exit status 3" "$RC $OUT"
run_ctl get a --prefix; check "released locks leave no keys" "" "$OUT"

# --- lock: a crashed holder's lock passes on when its session lease runs out ---
etcdctl --endpoints="$EP" lock c --ttl 3 >"$L.c1" 2>&1 & C1=$!
sleep 0.7
etcdctl --endpoints="$EP" lock c >"$L.c2" 2>&1 & C2=$!
sleep 0.5
check "waiter waits while the holder lives" "" "$(cat "$L.c2")"
START=$(date +%s%N)
kill -9 "$C1"; wait "$C1" 2>/dev/null
for _ in $(seq 1 60); do [ -s "$L.c2" ] && break; sleep 0.1; done
MS=$(( ($(date +%s%N) - START) / 1000000 ))
if [ -s "$L.c2" ] && [ "$MS" -le 4500 ]; then pass "waiter takes over from a killed holder (--ttl 3: ${MS} ms)"; else fail "waiter takes over from a killed holder" "${MS} ms: $(cat "$L.c2")"; fi
kill -INT "$C2"; wait "$C2"

# --- election: two campaigners, one leader at a time ---
etcdctl --endpoints="$EP" elect e p1 >"$L.e1" 2>&1 & E1=$!
sleep 0.7
OUT=$(timeout 2 etcdctl --endpoints="$EP" elect -l e 2>&1 | head -2)
check_match "elect -l sees the leader's proposal" "^e/[0-9a-f]+"$'\n'"p1$" "$OUT"
etcdctl --endpoints="$EP" elect e p2 >"$L.e2" 2>&1 & E2=$!
(timeout 4 etcdctl --endpoints="$EP" elect -l e >"$L.obs" 2>&1 &)
sleep 0.7
check "second campaigner waits" "" "$(cat "$L.e2")"
kill -INT "$E1"; wait "$E1"
for _ in $(seq 1 50); do [ -s "$L.e2" ] && break; sleep 0.1; done
check_match "second campaigner leads once the first resigns" "^e/[0-9a-f]+"$'\n'"p2$" "$(cat "$L.e2")"
sleep 0.3
check_match "elect -l follows the change of leader" "p1"$'\n'"e/[0-9a-f]+"$'\n'"p2" "$(cat "$L.obs")"
kill -INT "$E2"; wait "$E2"

e2e_finish
