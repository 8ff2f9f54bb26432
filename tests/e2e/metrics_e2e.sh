#!/usr/bin/env bash
# /metrics beside etcd 3.4: after the same requests on a single member and on 3 members, every metric
# name etcd exports (its v2 store, gRPC proxy and Go runtime aside) is exported with etcd's type,
# but for the deliberate absences named below; and the counters of what was done (puts, deletes,
# ranges, leases granted, revoked and renewed, expired, client calls) read the same.
source "$(dirname "$0")/lib.sh"
e2e_plan 7

# Absent on purpose: bbolt's commit phases (RocksDB has none of them), the fsync of a Raft snapshot
# file (Leasehold writes none: its snapshots are streamed from the store).
DELIBERATE='etcd_debugging_disk_backend_commit_rebalance_duration_seconds
etcd_debugging_disk_backend_commit_spill_duration_seconds
etcd_debugging_disk_backend_commit_write_duration_seconds
etcd_snap_fsync_duration_seconds'
# Outside the comparison: Go's runtime and Prometheus' own handler, etcd's v2 store and its gRPC proxy.
NOT_COMPARED='^(go_|promhttp_|etcd_debugging_store_|etcd_grpc_proxy_|etcd_server_go_version)'

declare -a PIDS
start_cluster() { # binary n name -> EPS (client endpoints), MEPS (metrics endpoints)
  local bin=$1 n=$2 name=$3 initial="" i
  local -a cp pp mp
  for i in $(seq 1 "$n"); do
    cp[$i]=$(free_port); pp[$i]=$(free_port); mp[$i]=$(free_port)
    initial+="${initial:+,}$name$i=http://127.0.0.1:${pp[$i]}"
  done
  EPS=""; MEPS=""
  for i in $(seq 1 "$n"); do
    "$bin" --name "$name$i" --data-dir "$E2E_DIR/$name$n-$i" \
      --listen-client-urls "http://127.0.0.1:${cp[$i]}" --advertise-client-urls "http://127.0.0.1:${cp[$i]}" \
      --listen-peer-urls "http://127.0.0.1:${pp[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${pp[$i]}" \
      --initial-cluster "$initial" --initial-cluster-token "$name-$$" \
      --listen-metrics-urls "http://127.0.0.1:${mp[$i]}" >"$E2E_DIR/$name$n-$i.log" 2>&1 &
    PIDS+=($!)
    EPS+="${EPS:+,}127.0.0.1:${cp[$i]}"; MEPS+="${MEPS:+ }127.0.0.1:${mp[$i]}"
  done
  for _ in $(seq 1 150); do
    etcdctl --endpoints="$EPS" endpoint health >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "$name's $n members start" "$(tail -3 "$E2E_DIR/$name$n-1.log")"
}
stop_all() { kill "${PIDS[@]}" 2>/dev/null; wait "${PIDS[@]}" 2>/dev/null; PIDS=(); }
trap 'stop_all; rm -rf "$E2E_DIR"' EXIT

# The same requests on each server: writes, reads, a transaction, leases (one kept alive, one
# revoked, one left to expire), a watch, a compaction, a defragment, hashes and a snapshot.
load() { # endpoints (the first takes the requests)
  local e=(--endpoints="${1%%,*}" --dial-timeout=2s --command-timeout=10s) id
  etcdctl "${e[@]}" put a 1 >/dev/null; etcdctl "${e[@]}" put b 2 >/dev/null
  etcdctl "${e[@]}" get a >/dev/null; etcdctl "${e[@]}" get "" --prefix >/dev/null
  etcdctl "${e[@]}" del a >/dev/null
  etcdctl "${e[@]}" txn <<<$'value("b") = "2"\n\nput c 3\nget b\n\n' >/dev/null
  id=$(etcdctl "${e[@]}" lease grant 60 | awk '{print $2}')
  etcdctl "${e[@]}" lease keep-alive --once "$id" >/dev/null
  etcdctl "${e[@]}" lease timetolive "$id" >/dev/null
  etcdctl "${e[@]}" lease revoke "$id" >/dev/null
  id=$(etcdctl "${e[@]}" lease grant 2 | awk '{print $2}')
  etcdctl "${e[@]}" put expiring x --lease="$id" >/dev/null
  timeout 2 etcdctl "${e[@]}" watch b >/dev/null
  etcdctl "${e[@]}" compact 3 >/dev/null
  etcdctl "${e[@]}" defrag >/dev/null 2>&1
  etcdctl "${e[@]}" endpoint hashkv >/dev/null
  etcdctl "${e[@]}" snapshot save "$E2E_DIR/snap-$RANDOM.db" >/dev/null 2>&1
  sleep 6  # the short lease expires and is revoked
}

# Every member's metric names with their types, merged.
names() { for m in $1; do curl -s "http://$m/metrics" | awk '/^# TYPE/ {print $3, $4}'; done | sort -u; }
# A metric's value summed over the members (labels kept in the name match).
value() { for m in $1; do curl -s "http://$m/metrics"; done | awk -v n="$2" '$1 == n {s += $2} END {print s + 0}'; }
# (With 3 members, etcd 3.4 runs a transaction's ranges only on the member that answers it, so its
# etcd_mvcc_txn_total counts there alone; Leasehold's members all run them. Compared on 1 member.)
COUNTED='etcd_mvcc_put_total etcd_mvcc_delete_total etcd_debugging_lease_granted_total
etcd_debugging_lease_revoked_total etcd_debugging_lease_renewed_total etcd_debugging_server_lease_expired_total
etcd_debugging_mvcc_keys_total etcd_debugging_mvcc_compact_revision etcd_server_client_requests_total{client_api_version="3.4",type="unary"}'

for n in 1 3; do
  start_cluster etcd "$n" etcd; load "$EPS"
  names "$MEPS" | grep -Ev "$NOT_COMPARED" >"$E2E_DIR/etcd-$n.names"
  [ "$n" = 1 ] && counted="$COUNTED etcd_mvcc_txn_total" || counted=$COUNTED
  ETCD_VALUES=$(for m in $counted; do echo "$m $(value "$MEPS" "$m")"; done)
  stop_all
  start_cluster "$LEASEHOLD_BIN" "$n" lh; load "$EPS"
  names "$MEPS" >"$E2E_DIR/lh-$n.names"
  LH_VALUES=$(for m in $counted; do echo "$m $(value "$MEPS" "$m")"; done)
  stop_all
  MISSING=$(comm -23 <(cut -d' ' -f1 "$E2E_DIR/etcd-$n.names") <(cut -d' ' -f1 "$E2E_DIR/lh-$n.names"))
  check "$n member(s): every metric name etcd exports, but the deliberate absences" "$DELIBERATE" "$MISSING"
  check "$n member(s): with etcd's types" "" "$(join "$E2E_DIR/etcd-$n.names" "$E2E_DIR/lh-$n.names" | awk '$2 != $3')"
  check "$n member(s): the counts of what was done read as etcd's" "$ETCD_VALUES" "$LH_VALUES"
  [ "$n" = 1 ] && check "etcd 3.4 exports the names compared ($(wc -l <"$E2E_DIR/etcd-1.names") of them)" yes \
    "$([ "$(wc -l <"$E2E_DIR/etcd-1.names")" -ge 80 ] && echo yes)"
done
echo "names etcd 3.4 does not have: $(comm -13 <(cut -d' ' -f1 "$E2E_DIR/etcd-3.names") <(cut -d' ' -f1 "$E2E_DIR/lh-3.names") | tr '\n' ' ')"
e2e_finish
