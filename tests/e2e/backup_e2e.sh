#!/usr/bin/env bash
# Backups end to end: `etcdctl snapshot save` from a running member, `leasehold snapshot status`,
# refusal of damaged files, and `leasehold snapshot restore` seeding a new three-member cluster that
# serves the same keys, revisions and leases.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cluster_lib.sh"

e2e_start_server
LEASE=$(ctl lease grant 600 | awk '{print $2}')
ctl put a 1 >/dev/null; ctl put b 2 --lease="$LEASE" >/dev/null; ctl put a 3 >/dev/null
ctl put gone x >/dev/null; ctl del gone >/dev/null; ctl put c 4 >/dev/null
BEFORE=$(ctl get --prefix "" -w json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["header"]["revision"], [(k["key"],k["value"],k["create_revision"],k["mod_revision"],k["version"],k.get("lease",0)) for k in d["kvs"]])')

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

# A new three-member cluster, each member restored from the same file.
CLUSTER_N=3
for i in 1 2 3; do
  CPORT[$i]=$(free_port); PPORT[$i]=$(free_port); MPORT[$i]=$(free_port)
  "$LEASEHOLD_BIN" snapshot restore "$E2E_DIR/s.db" --data-dir "$E2E_DIR/m$i" >/dev/null || fail "restore m$i"
done
for i in 1 2 3; do member_start "$i"; done
[ -n "$(leader_index)" ] || { tail -n 20 "$E2E_DIR"/m*.log; exit 1; }
for i in 1 2 3; do
  AFTER=$(ctl_at "$i" get --prefix "" -w json --consistency=s | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["header"]["revision"], [(k["key"],k["value"],k["create_revision"],k["mod_revision"],k["version"],k.get("lease",0)) for k in d["kvs"]])')
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
