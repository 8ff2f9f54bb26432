#!/usr/bin/env bash
# etcd's --experimental-corrupt-check-time: three members checking every second. While their data
# agree, the leader's checks pass; once a follower's stored value is changed behind its back (by
# tests/e2e/flip_value.cc while it is stopped), the leader finds its hash differs at the same
# revision and raises the CORRUPT alarm for it: `etcdctl alarm list` names it, writes everywhere
# fail with etcd's "etcdserver: corrupt cluster", reads are still served, and once the corrupt
# member is gone and the alarm disarmed, writes are taken again.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cluster_lib.sh"
e2e_plan 14
FLIP_VALUE="${2:?usage: $0 path/to/leasehold path/to/flip_value}"

CLUSTER_N=3
for i in 1 2 3; do CPORT[$i]=$(free_port); PPORT[$i]=$(free_port); MPORT[$i]=$(free_port); done
for i in 1 2 3; do member_start "$i" --experimental-corrupt-check-time=1s; done
cluster_await
L=$(leader_index)
F=$(( L % 3 + 1 ))
ctl_at "$L" put precious gold >/dev/null
for _ in $(seq 1 50); do [ "$(ctl_at "$F" get precious --print-value-only --consistency=s 2>/dev/null)" = gold ] && break; sleep 0.1; done
check "the check is enabled on every member" 3 "$(grep -l '"msg":"enabled corruption checking"' "$E2E_DIR"/m[123].log | wc -l)"
PASSED='"msg":"finished peer corruption check","number-of-peers-checked":"2"'
for _ in $(seq 1 50); do grep -q "$PASSED" "$E2E_DIR/m$L.log" && break; sleep 0.1; done
check "the leader checked both peers" 1 "$([ "$(grep -c "$PASSED" "$E2E_DIR/m$L.log")" -ge 1 ] && echo 1 || echo 0)"
check "no alarm while the data agree" "" "$(ctl_at "$L" alarm list 2>&1)"

F_ID=$(ctl_at "$F" endpoint status | awk -F', ' '{print $2}')
member_stop "$F"
check "a stopped follower's stored value is changed" 1 "$("$FLIP_VALUE" "$E2E_DIR/m$F" gold)"
member_start "$F" --experimental-corrupt-check-time=1s
for _ in $(seq 1 100); do [ -n "$(ctl_at "$L" alarm list 2>/dev/null)" ] && break; sleep 0.1; done
F_DECIMAL=$(python3 -c "print(int('$F_ID', 16))")
check_match "the leader raises CORRUPT for it" "^memberID:$F_DECIMAL alarm:CORRUPT *$" "$(ctl_at "$L" alarm list 2>&1)"
check "and says why" 1 "$([ "$(grep -c '"msg":"same compact revision then hashes must match"' "$E2E_DIR/m$L.log")" -ge 1 ] && echo 1 || echo 0)"
for i in 1 2 3; do
  run_ctl_at() { OUT=$(ctl_at "$@" 2>"$E2E_DIR/err"); RC=$?; ERR=$(grep -v '"level":"warn"' "$E2E_DIR/err"); }
  run_ctl_at "$i" put another value
  check "member $i refuses writes" "1 Error: etcdserver: corrupt cluster" "$RC $ERR"
done
run_ctl_at "$L" lease grant 60
check "and lease grants" "1 Error: failed to grant lease (etcdserver: corrupt cluster)" "$RC $ERR"
check "reads are still served" "gold" "$(ctl_at "$L" get precious --print-value-only 2>&1)"
check "the client URL's /health says unhealthy" '{"health":"false"}' "$(curl -s "http://$(ep "$L")/health")"

# The corrupt member is taken out; once the alarm is disarmed, writes are taken again.
member_stop "$F"
ctl_at "$L" member remove "$F_ID" >/dev/null
ctl_at "$L" alarm disarm >/dev/null
check "after removing it and disarming, writes are taken" "OK" "$(ctl_at "$L" put another value 2>&1)"
check "no alarm left" "" "$(ctl_at "$L" alarm list 2>&1)"
e2e_finish
