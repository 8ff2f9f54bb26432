#!/usr/bin/env bash
# kill -9 and restart on the same data dir: acknowledged writes survive, a lease keeps its remaining
# TTL (not a fresh one) and its keys, renewed deadlines survive through checkpoints, and expiry still
# happens on time; the same with the log in a --wal-dir of its own, which the data dir then insists on.
source "$(dirname "$0")/lib.sh"
e2e_plan 16
e2e_start_server

ID=$(ctl lease grant 20 | awk '{print $2}')
GRANTED_AT=$(date +%s.%N)
ctl put crash/a 1 --lease="$ID" >/dev/null
ctl put crash/b 2 --lease="$ID" >/dev/null
RENEW=$(ctl lease grant 10 | awk '{print $2}')
ctl put crash/renewed 1 --lease="$RENEW" >/dev/null
for i in $(seq 1 30); do ctl put "crash/n$i" "$i" >/dev/null; done
sleep 5
ctl lease keep-alive --once "$RENEW" >/dev/null   # now expires 10 s from here, not 5 s
sleep 1.5                                          # a checkpoint makes the renewal durable
e2e_stop_server KILL
e2e_start_server

run_ctl get crash/n --prefix --keys-only
check "every acknowledged put survived kill -9" 30 "$(grep -c . <<<"$OUT")"
# What is left is 20 s less the time since the grant (about 9 s here, more on a slow machine): a
# fresh TTL would be 20 s again.
ELAPSED=$(echo "$(date +%s.%N) - $GRANTED_AT" | bc)
run_ctl lease timetolive "$ID" --keys
check_match "lease survived with its keys" "^lease $ID granted with TTL\(20s\), remaining\(([0-9]+)s\), attached keys\(\[crash/a crash/b\]\)$" "$OUT"
REMAINING=$(sed -E 's/.*remaining\(([0-9-]+)s\).*/\1/' <<<"$OUT")
if awk -v r="$REMAINING" -v e="$ELAPSED" 'BEGIN { exit !(r >= 20 - e - 1.5 && r <= 20 - e + 2.5) }'; then
  pass "remaining TTL continues from before the crash ($REMAINING s, $ELAPSED s after the grant)"
else
  fail "remaining TTL continues from before the crash" "remaining $REMAINING s, $ELAPSED s after the grant"
fi
run_ctl lease timetolive "$RENEW"
REMAINING=$(sed -E 's/.*remaining\(([0-9-]+)s\).*/\1/' <<<"$OUT")
if [ "${REMAINING:-0}" -ge 6 ]; then
  pass "a renewal before the crash is kept ($REMAINING s left)"
else
  fail "a renewal before the crash is kept" "$OUT"
fi

# The 20 s lease must go between its deadline and deadline + allowance (2 s) + revoke tick.
while ctl get crash/a --keys-only | grep -q crash/a; do
  sleep 0.2
  if [ "$(echo "$(date +%s.%N) - $GRANTED_AT > 30" | bc)" = 1 ]; then break; fi
done
GONE_AFTER=$(echo "$(date +%s.%N) - $GRANTED_AT" | bc)
if [ "$(echo "$GONE_AFTER >= 19.5 && $GONE_AFTER <= 24" | bc)" = 1 ]; then
  pass "expiry on time after restart (keys gone ${GONE_AFTER}s after grant)"
else
  fail "expiry on time after restart" "keys gone ${GONE_AFTER}s after grant"
fi
run_ctl get crash/b; check "all keys of the lease went together" "" "$OUT"

# A clean stop and a corrupted or foreign data dir.
e2e_stop_server TERM
mkdir -p "$E2E_DIR/foreign" && echo hello > "$E2E_DIR/foreign/file"
OUT=$("$LEASEHOLD_BIN" --data-dir "$E2E_DIR/foreign" --listen-client-urls "http://$EP" 2>&1); RC=$?
check "foreign data dir refused" 1 "$RC"
check_match "foreign data dir message" "holds no Leasehold database" "$OUT"
# --wal-dir: the log in a folder of its own survives a kill -9 with everything acknowledged; the
# data dir holds no log then; opened with another log folder, or none, it is refused (its latest
# writes would be missing); a snapshot restored with --wal-dir starts with the same.
WAL="$E2E_DIR/disk2/wal"
e2e_start_server --data-dir "$E2E_DIR/wal-data" --wal-dir "$WAL"
for i in $(seq 1 20); do ctl put "wal/$i" "v$i" >/dev/null || fail "put wal/$i"; done
e2e_stop_server KILL
check "the log is in --wal-dir" yes "$(ls "$WAL"/*.log >/dev/null 2>&1 && echo yes || echo no)"
check "and not in the data dir" no "$(ls "$E2E_DIR/wal-data"/*.log >/dev/null 2>&1 && echo yes || echo no)"
e2e_start_server --data-dir "$E2E_DIR/wal-data" --wal-dir "$WAL"
check "after kill -9, every acknowledged write is back" 20 "$(ctl get wal/ --prefix --keys-only | grep -c wal/)"
ctl snapshot save "$E2E_DIR/wal.db" >/dev/null 2>&1 || fail "snapshot save"
e2e_stop_server KILL
for other in "--wal-dir $E2E_DIR/elsewhere" ""; do
  # shellcheck disable=SC2086
  OUT=$("$LEASEHOLD_BIN" --data-dir "$E2E_DIR/wal-data" --listen-client-urls "http://$EP" $other 2>&1); RC=$?
  check "opened with ${other:-no --wal-dir}, it is refused" 1 "$RC"
  check_match "saying where its log is" "keeps its write-ahead log in $WAL" "$OUT"
done
"$LEASEHOLD_BIN" snapshot restore "$E2E_DIR/wal.db" --data-dir "$E2E_DIR/restored" --wal-dir "$E2E_DIR/restored-wal" >/dev/null ||
  fail "snapshot restore --wal-dir"
e2e_start_server --data-dir "$E2E_DIR/restored" --wal-dir "$E2E_DIR/restored-wal"
check "a snapshot restored with --wal-dir serves its keys" 20 "$(ctl get wal/ --prefix --keys-only | grep -c wal/)"
e2e_stop_server
e2e_finish || exit 1
