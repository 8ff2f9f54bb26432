#!/usr/bin/env bash
# A follower that is paused (SIGSTOP) while 10,000 writes go by and the log is compacted catches up
# by snapshot (with its leases and members), its watchers get every event they missed, it survives
# a restart after it, and ends byte-identical.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cluster_lib.sh"
e2e_plan 11
BENCH="$(dirname "$LEASEHOLD_BIN")/../client/leasehold-bench"
dump() { ctl_at "$1" get "" --prefix -w json --consistency=s | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("kvs",[]), sort_keys=True))' | md5sum; }

CLUSTER_N=3
for i in 1 2 3; do CPORT[$i]=$(free_port); PPORT[$i]=$(free_port); done
for i in 1 2 3; do member_start "$i" --snapshot-count 1000; done
L=$(leader_index); F=$(( L % 3 + 1 ))
ID=$(ctl_at "$L" lease grant 300 | awk '{print $2}')
ctl_at "$L" put leased 1 --lease="$ID" >/dev/null
timeout 60 etcdctl --endpoints="$(ep "$F")" watch snapwatch/ --prefix >"$E2E_DIR/watch.out" 2>&1 &
WATCH=$!
sleep 0.5
kill -STOP "${CPID[$F]}"
for i in 1 2 3; do ctl_at "$L" put "snapwatch/$i" "v$i" >/dev/null; done
# 1 KiB values: the snapshot (about 10 MB) travels in 4 MB chunks.
"$BENCH" put --endpoints="$(ep "$L")" --total=10000 --clients=32 --conns=4 --key-space=3000 --value-size=1024 >/dev/null 2>&1
ctl_at "$L" put last 1 >/dev/null
check "the leader compacted its log" 1 "$(grep -c 'compacted the raft log' "$E2E_DIR/m$L.log" | awk '{print ($1 > 0)}')"

kill -CONT "${CPID[$F]}"
for _ in $(seq 1 100); do [ -n "$(ctl_at "$F" get last --consistency=s --keys-only 2>/dev/null)" ] && break; sleep 0.1; done
check "lagging follower caught up" "last" "$(ctl_at "$F" get last --consistency=s --keys-only | head -1)"
check "it caught up by snapshot" 1 "$(grep -c 'installed a snapshot' "$E2E_DIR/m$F.log")"
check "the lease came with it" "$ID" "$(ctl_at "$F" lease list | tail -n +2)"
check "the member list came with it" 3 "$(ctl_at "$F" member list | grep -c ', started, ')"
for _ in $(seq 1 30); do [ "$(grep -c '^PUT$' "$E2E_DIR/watch.out")" = 3 ] && break; sleep 0.1; done
check "its watcher got the events the snapshot skipped" "PUT snapwatch/1 v1 PUT snapwatch/2 v2 PUT snapwatch/3 v3" \
  "$(tr '\n' ' ' <"$E2E_DIR/watch.out" | sed 's/ $//')"
kill "$WATCH" 2>/dev/null; wait "$WATCH" 2>/dev/null
EXPECTED=$(dump "$L")
for i in 1 2 3; do check "member $i state identical" "$EXPECTED" "$(dump "$i")"; done
member_stop "$F" TERM
member_start "$F" --snapshot-count 1000
for _ in $(seq 1 50); do [ "$(dump "$F" 2>/dev/null)" = "$EXPECTED" ] && break; sleep 0.1; done
check "restart after the snapshot keeps the state" "$EXPECTED" "$(dump "$F")"
run_ctl_at() { OUT=$(ctl_at "$@" 2>&1); RC=$?; }
run_ctl_at "$F" put after-restart 1
check "it serves writes after the restart" "OK" "$OUT"

cluster_stop_all
e2e_finish
