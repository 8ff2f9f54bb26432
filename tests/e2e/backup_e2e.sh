#!/usr/bin/env bash
# Backups end to end: `etcdctl snapshot save` from a running member, `leasehold snapshot status`,
# etcd's own `snapshot status` and `snapshot restore` reading the file (an etcd 3.4 member restored
# from it serves the same keys), refusal of damaged files, and `leasehold snapshot restore` seeding a
# new single-member and a new three-member cluster that serve the same keys, revisions and leases.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cluster_lib.sh"
e2e_plan 27
trap 'e2e_stop_etcd; cluster_stop_all; e2e_stop_server; rm -rf "$E2E_DIR"' EXIT

e2e_start_server
LEASE=$(ctl lease grant 600 | awk '{print $2}')
ctl put a 1 >/dev/null; ctl put b 2 --lease="$LEASE" >/dev/null; ctl put a 3 >/dev/null
ctl put gone x >/dev/null; ctl del gone >/dev/null; ctl put c 4 >/dev/null
KVS='import json,sys; d=json.load(sys.stdin); print(d["header"]["revision"], [(k["key"],k["value"],k["create_revision"],k["mod_revision"],k["version"],k.get("lease",0)) for k in d["kvs"]])'
BEFORE=$(ctl get --prefix "" -w json | python3 -c "$KVS")

run_ctl snapshot save "$E2E_DIR/s.db"
check "snapshot save succeeds" 0 "$RC"
check "snapshot save reports the file" "Snapshot saved at $E2E_DIR/s.db" "$OUT"
SIZE=$(stat -c %s "$E2E_DIR/s.db")
check "saved file is whole 512-byte pages plus a digest" 32 $((SIZE % 512))
# Writes after the save are not in it.
ctl put after-save y >/dev/null
e2e_stop_server

STATUS=$("$LEASEHOLD_BIN" snapshot status "$E2E_DIR/s.db")
check_match "status shows revision 7 and 3 live keys" '\|[[:space:]]+7 \|[[:space:]]+3 \|' "$STATUS"

# etcd's tools read it as one of etcd's own snapshots.
OUT=$(etcdctl snapshot status "$E2E_DIR/s.db" -w json 2>&1); RC=$?
check "etcdctl snapshot status reads the file" 0 "$RC"
check "and finds the saved revision" 7 "$(echo "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["revision"])' 2>&1)"
ETCD_PORT=$(free_port); ETCD_PEER=$(free_port)
OUT=$(etcdctl snapshot restore "$E2E_DIR/s.db" --data-dir "$E2E_DIR/etcd" --name r \
  --initial-cluster "r=http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" 2>&1); RC=$?
check "etcdctl snapshot restore accepts the file" 0 "$RC"
# Leasehold, too, starts on the dir etcdctl made (a copy: etcd starts on the original below).
cp -r "$E2E_DIR/etcd" "$E2E_DIR/etcd-copy"
LH_PORT=$(free_port)
"$LEASEHOLD_BIN" --name r --data-dir "$E2E_DIR/etcd-copy" --listen-client-urls "http://127.0.0.1:$LH_PORT" \
  --listen-peer-urls "http://127.0.0.1:$(free_port)" >"$E2E_DIR/copy.log" 2>&1 &
COPY_PID=$!
for _ in $(seq 1 100); do etcdctl --endpoints="127.0.0.1:$LH_PORT" endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
check "leasehold imports the etcd data dir etcdctl restored" 1 "$(grep -c "imported etcd's data dir" "$E2E_DIR/copy.log")"
check "and serves the same keys at the same revision" "$BEFORE" \
  "$(etcdctl --endpoints="127.0.0.1:$LH_PORT" get --prefix "" -w json | python3 -c "$KVS" 2>&1)"
kill "$COPY_PID"; wait "$COPY_PID" 2>/dev/null
etcd --name r --data-dir "$E2E_DIR/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-cluster "r=http://127.0.0.1:$ETCD_PEER" \
  >"$E2E_DIR/etcd.log" 2>&1 &
ETCD_PID=$!
etcd_ctl() { timeout 20 etcdctl --endpoints="127.0.0.1:$ETCD_PORT" --dial-timeout=2s --command-timeout=5s "$@"; }
for _ in $(seq 1 100); do etcd_ctl endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
check "an etcd 3.4 member restored from it serves the same keys at the same revision" "$BEFORE" \
  "$(etcd_ctl get --prefix "" -w json | python3 -c "$KVS" 2>&1)"
check "with the history before it" 1 "$(etcd_ctl get a --rev=2 --print-value-only)"
check_match "and the lease with its key" "granted with TTL\(600s\).*attached keys\(\[b\]\)" "$(etcd_ctl lease timetolive "$LEASE" --keys)"
e2e_stop_etcd

cp "$E2E_DIR/s.db" "$E2E_DIR/bad.db"
printf 'X' | dd of="$E2E_DIR/bad.db" bs=1 seek=40 conv=notrunc 2>/dev/null
OUT=$("$LEASEHOLD_BIN" snapshot restore "$E2E_DIR/bad.db" --data-dir "$E2E_DIR/bad-dir" 2>&1); RC=$?
check "a corrupt file is refused" 1 "$RC"
check_match "with a digest error" "digest mismatch" "$OUT"
check "and leaves no data dir behind" no "$([ -e "$E2E_DIR/bad-dir" ] && echo yes || echo no)"
head -c 100 "$E2E_DIR/s.db" >"$E2E_DIR/short.db"
OUT=$("$LEASEHOLD_BIN" snapshot status "$E2E_DIR/short.db" 2>&1); RC=$?
check "a truncated file is refused" 1 "$RC"
OUT=$("$LEASEHOLD_BIN" snapshot restore "$E2E_DIR/s.db" --data-dir "$E2E_DIR/data" 2>&1); RC=$?
check "restoring over an existing data dir is refused" 1 "$RC"

# A new single-member cluster from the file, under another name (so another member id): it must
# lead itself, which it cannot if the old cluster's voters came along.
CLUSTER_N=1
CPORT[1]=$(free_port); PPORT[1]=$(free_port); MPORT[1]=$(free_port)
"$LEASEHOLD_BIN" snapshot restore "$E2E_DIR/s.db" --data-dir "$E2E_DIR/m1" >/dev/null || fail "restore a single member"
member_start 1
check "a single restored member leads itself" 1 "$(leader_index)"
check "and serves the saved keys at the saved revision" "$BEFORE" "$(ctl_at 1 get --prefix "" -w json | python3 -c "$KVS")"
check "and takes writes" "OK" "$(ctl_at 1 put single-member-write 1 2>&1)"
member_stop 1
rm -rf "$E2E_DIR/m1"

# A new three-member cluster, each member restored from the same file.
CLUSTER_N=3
for i in 1 2 3; do
  CPORT[$i]=$(free_port); PPORT[$i]=$(free_port); MPORT[$i]=$(free_port)
  "$LEASEHOLD_BIN" snapshot restore "$E2E_DIR/s.db" --data-dir "$E2E_DIR/m$i" >/dev/null || fail "restore m$i"
done
for i in 1 2 3; do member_start "$i"; done
[ -n "$(leader_index)" ] || { tail -n 20 "$E2E_DIR"/m*.log; exit 1; }
for i in 1 2 3; do
  AFTER=$(ctl_at "$i" get --prefix "" -w json --consistency=s | python3 -c "$KVS")
  check "member $i serves the saved keys at the saved revision" "$BEFORE" "$AFTER"
done
MEMBERS=$(ctl_at 1 member list | wc -l)
check "the restored cluster has its own three members" 3 "$MEMBERS"
TTL=$(ctl_at 2 lease timetolive "$LEASE" --keys)
check_match "the lease survives with its keys and a fresh TTL" "granted with TTL\(600s\), remaining\((59[0-9]|600)s\), attached keys\(\[b\]\)" "$TTL"
ctl_at 3 put d 5 >/dev/null
REV=$(ctl_at 1 get d -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["kvs"][0]["mod_revision"])')
check "revisions continue from the saved one" 8 "$REV"
ctl_at 1 lease revoke "$LEASE" >/dev/null
check "revoking the restored lease deletes its key" "" "$(ctl_at 2 get b)"
e2e_finish
