#!/usr/bin/env bash
# Moving from etcd: a snapshot saved from a populated etcd 3.4 (keys with history, a deletion, a
# compaction, a lease with a key, users and roles with auth on) restored into Leasehold with
# `leasehold snapshot restore`, and etcd's own disaster-recovery procedure (`etcdctl snapshot
# restore`, then the member started on that dir) run unchanged on Leasehold; every key, revision,
# lease, user and role compared with etcd restored from the same file. Damaged files are refused,
# changing nothing.
source "$(dirname "$0")/lib.sh"
e2e_plan 12

ROOT_AUTH=(--user root:rootpw)
# The state as clients see it, one section per line group: keys with their revisions, an old
# revision, a compacted one, leases (granted TTL and keys), users and roles, what auth allows.
dump() { # endpoint
  local e=(--endpoints="$1" --dial-timeout=2s --command-timeout=5s)
  echo "== keys"
  etcdctl "${e[@]}" "${ROOT_AUTH[@]}" get "" --prefix -w json 2>&1 | python3 -c 'import json, sys
r = json.load(sys.stdin); print(r["header"]["revision"]); print(json.dumps(r.get("kvs"), sort_keys=True))'
  echo "== history"
  etcdctl "${e[@]}" "${ROOT_AUTH[@]}" get a --rev=4 2>&1
  echo "== compacted"
  etcdctl "${e[@]}" "${ROOT_AUTH[@]}" get a --rev=2 2>&1 | grep -v '"level":"warn"'
  echo "== leases"
  for id in $(etcdctl "${e[@]}" "${ROOT_AUTH[@]}" lease list 2>&1 | tail -n +2); do
    etcdctl "${e[@]}" "${ROOT_AUTH[@]}" lease timetolive "$id" --keys 2>&1 | sed -E 's/remaining\([0-9]+s\)/remaining(N)/'
  done
  echo "== users"
  etcdctl "${e[@]}" "${ROOT_AUTH[@]}" user list 2>&1
  etcdctl "${e[@]}" "${ROOT_AUTH[@]}" user get u1 2>&1
  etcdctl "${e[@]}" "${ROOT_AUTH[@]}" role get r1 2>&1
  echo "== auth"
  etcdctl "${e[@]}" get a 2>&1 | grep -v '"level":"warn"'
  etcdctl "${e[@]}" --user u1:pw get a 2>&1
  etcdctl "${e[@]}" --user u1:pw get c 2>&1 | grep -v '"level":"warn"'
}
section() { sed -n "/^== $2\$/,/^== /p" "$1" | grep -v '^== '; }

start() { # name binary data-dir -> PID, EPNT
  local cp pp
  cp=$(free_port); pp=$(free_port)
  "$2" --name m1 --data-dir "$3" --listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp" \
    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
    --initial-cluster "m1=http://127.0.0.1:$pp" >>"$E2E_DIR/$1.log" 2>&1 &
  PID=$!
  EPNT="127.0.0.1:$cp"
  for _ in $(seq 1 100); do
    etcdctl --endpoints="$EPNT" "${ROOT_AUTH[@]}" get x >/dev/null 2>&1 && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  fail "$1 starts" "$(tail -3 "$E2E_DIR/$1.log")"
}
stop() { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }

# A populated etcd 3.4, and its snapshot.
start source etcd "$E2E_DIR/source"
S=(--endpoints="$EPNT")
for v in 1 2 3; do etcdctl "${S[@]}" put a "v$v" >/dev/null; done  # a at revisions 2, 3, 4
etcdctl "${S[@]}" put b x >/dev/null && etcdctl "${S[@]}" del b >/dev/null
etcdctl "${S[@]}" put c y >/dev/null
etcdctl "${S[@]}" compact 3 >/dev/null
LEASE=$(etcdctl "${S[@]}" lease grant 900 | awk '{print $2}')
etcdctl "${S[@]}" put leased z --lease="$LEASE" >/dev/null
etcdctl "${S[@]}" user add root:rootpw >/dev/null && etcdctl "${S[@]}" user grant-role root root >/dev/null
etcdctl "${S[@]}" role add r1 >/dev/null && etcdctl "${S[@]}" role grant-permission r1 read a >/dev/null
etcdctl "${S[@]}" user add u1:pw >/dev/null && etcdctl "${S[@]}" user grant-role u1 r1 >/dev/null
etcdctl "${S[@]}" auth enable >/dev/null
etcdctl "${S[@]}" "${ROOT_AUTH[@]}" snapshot save "$E2E_DIR/etcd.db" >/dev/null 2>&1 || fail "etcd saves a snapshot"
stop

# The reference: etcd restored from it by its own procedure.
restore_dir() { etcdctl snapshot restore "$E2E_DIR/etcd.db" --name m1 --data-dir "$1" \
  --initial-cluster m1=http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 >/dev/null 2>&1; }
restore_dir "$E2E_DIR/etcd-restored"
start reference etcd "$E2E_DIR/etcd-restored"
dump "$EPNT" >"$E2E_DIR/etcd.dump"
stop
[ "$(section "$E2E_DIR/etcd.dump" keys | head -1)" -ge 8 ] || fail "the reference holds the source's state" "$(head -5 "$E2E_DIR/etcd.dump")"

# 1. `leasehold snapshot restore` of etcd's snapshot.
OUT=$("$LEASEHOLD_BIN" snapshot restore "$E2E_DIR/etcd.db" --data-dir "$E2E_DIR/restored" 2>&1)
check_match "leasehold snapshot restore takes etcd's snapshot" "^restored snapshot [0-9a-f]{8} \(revision 8, 3 keys, 1 leases\)" "$OUT"
start restored "$LEASEHOLD_BIN" "$E2E_DIR/restored"
dump "$EPNT" >"$E2E_DIR/restored.dump"
stop
for part in keys history compacted leases users auth; do
  check "restored from etcd's snapshot: $part as etcd's" "$(section "$E2E_DIR/etcd.dump" "$part")" "$(section "$E2E_DIR/restored.dump" "$part")"
done

# 2. etcd's disaster-recovery procedure, unchanged: the member started on etcdctl's restored dir.
restore_dir "$E2E_DIR/dr"
start dr "$LEASEHOLD_BIN" "$E2E_DIR/dr"
dump "$EPNT" >"$E2E_DIR/dr.dump"
stop
check "a member started on etcdctl's restored dir serves etcd's state" "$(cat "$E2E_DIR/etcd.dump")" "$(cat "$E2E_DIR/dr.dump")"
check "it says it imported the dir, once, keeping etcd's folder aside" "1 yes" \
  "$(grep -c "imported etcd's data dir" "$E2E_DIR/dr.log") $([ -d "$E2E_DIR/dr/member.etcd-imported" ] && echo yes)"
etcdctl --endpoints="$EPNT" "${ROOT_AUTH[@]}" put after-move 1 >/dev/null 2>&1
start dr "$LEASEHOLD_BIN" "$E2E_DIR/dr"
AFTER=$(etcdctl --endpoints="$EPNT" "${ROOT_AUTH[@]}" get a --print-value-only 2>&1)
stop
check "restarted, it opens its own database without importing again" "1 v3" \
  "$(grep -c "imported etcd's data dir" "$E2E_DIR/dr.log") $AFTER"

# 3. Damaged files change nothing.
cp "$E2E_DIR/etcd.db" "$E2E_DIR/damaged.db"
# Four bytes inside the file overwritten: its digest no longer matches.
printf '\377\377\377\377' | dd of="$E2E_DIR/damaged.db" bs=1 seek=9000 conv=notrunc 2>/dev/null
OUT=$("$LEASEHOLD_BIN" snapshot restore "$E2E_DIR/damaged.db" --data-dir "$E2E_DIR/from-damaged" 2>&1); RC=$?
check "a damaged snapshot is refused, making no data dir" "1 Error: $E2E_DIR/damaged.db: digest mismatch (the file is truncated or corrupt) no" \
  "$RC $OUT $([ -e "$E2E_DIR/from-damaged" ] && echo yes || echo no)"
restore_dir "$E2E_DIR/dr-damaged"
head -c 5000 "$E2E_DIR/dr-damaged/member/snap/db" >"$E2E_DIR/short" && mv "$E2E_DIR/short" "$E2E_DIR/dr-damaged/member/snap/db"
BEFORE=$(cd "$E2E_DIR/dr-damaged" && find . | sort | md5sum)
"$LEASEHOLD_BIN" --data-dir "$E2E_DIR/dr-damaged" --listen-client-urls "http://127.0.0.1:$(free_port)" \
  --listen-peer-urls "http://127.0.0.1:$(free_port)" >"$E2E_DIR/dr-damaged.log" 2>&1; RC=$?
check "a member on an etcd dir with a damaged backend stops, leaving the dir as it was" "1 1 same" \
  "$RC $(grep -c "cannot import the etcd data dir's backend" "$E2E_DIR/dr-damaged.log") $([ "$BEFORE" = "$(cd "$E2E_DIR/dr-damaged" && find . | sort | md5sum)" ] && echo same)"

e2e_finish
