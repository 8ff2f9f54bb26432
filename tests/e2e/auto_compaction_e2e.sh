#!/usr/bin/env bash
# etcd's automatic compaction, beside etcd 3.4 configured alike: --auto-compaction-retention=2s
# (periodic) compacts, on its own, the history older than two seconds, so a read at a revision
# written before then gets etcd's "required revision has been compacted" from both; bad values of
# the two flags stop the start. (Revision mode compacts every five minutes, as etcd's: its schedule
# is covered by tests/server/auto_compactor_test.cc.)
source "$(dirname "$0")/lib.sh"
e2e_plan 13

e2e_start_server --auto-compaction-mode=periodic --auto-compaction-retention=2s
e2e_start_etcd --auto-compaction-mode=periodic --auto-compaction-retention=2s
ref_ctl() { timeout 20 etcdctl --endpoints="127.0.0.1:$ETCD_PORT" --dial-timeout=2s --command-timeout=5s "$@"; }
for i in 1 2 3; do ctl put k "v$i" >/dev/null; ref_ctl put k "v$i" >/dev/null; done
check "history is there at first" v1 "$(ctl get k --rev=2 --print-value-only 2>&1)"
check "(etcd 3.4 alike)" v1 "$(ref_ctl get k --rev=2 --print-value-only 2>&1)"
# The first compaction comes one period after the member began leading, to what was current a
# period before; a put each half second keeps the revision moving, as a live cluster's does.
for _ in $(seq 1 20); do
  ctl put tick x >/dev/null; ref_ctl put tick x >/dev/null
  OURS=$(ctl get k --rev=2 2>&1); THEIRS=$(ref_ctl get k --rev=2 2>&1)
  [[ "$OURS" == *compacted* && "$THEIRS" == *compacted* ]] && break
  sleep 0.5
done
check "compacted on its own: an old revision is refused" \
  "Error: etcdserver: mvcc: required revision has been compacted" "$(grep -v '"level"' <<<"$OURS")"
check "(etcd 3.4 alike)" "Error: etcdserver: mvcc: required revision has been compacted" \
  "$(grep -v '"level"' <<<"$THEIRS")"
check "the newest value is kept" v3 "$(ctl get k --print-value-only 2>&1)"
check_match "the leader logs it as etcd does" '"msg":"completed auto periodic compaction"' "$(cat "$E2E_DIR/server.log")"
e2e_stop_etcd

for bad in "--auto-compaction-mode=hourly" "--auto-compaction-retention=soon" \
  "--auto-compaction-mode=revision --auto-compaction-retention=5m"; do
  # shellcheck disable=SC2086
  OUT=$("$LEASEHOLD_BIN" --data-dir "$E2E_DIR/bad" --listen-client-urls "http://127.0.0.1:$(free_port)" \
    --listen-peer-urls "http://127.0.0.1:$(free_port)" $bad 2>&1); RC=$?
  check "$bad stops the start" 1 "$RC"
  check_match "saying why" '"msg":"bad auto compaction"' "$OUT"
done
check_match "an unknown mode in etcd's words" 'unknown auto-compaction-mode \\"hourly\\"' \
  "$("$LEASEHOLD_BIN" --data-dir "$E2E_DIR/bad" --auto-compaction-mode=hourly 2>&1)"

e2e_finish
