#!/usr/bin/env bash
# The service-registry use case with examples/service_registry: instances register under leases they
# keep alive; a watcher sees them come and go; a SIGINT deregisters at once; an instance killed with
# -9 vanishes within TTL + the expiry bound (one election timeout), and not before its last renewal
# ran out. etcdctl sees the same keys.
# usage: registry_e2e.sh <leasehold> <service_registry>
source "$(dirname "$0")/lib.sh"
e2e_plan 8
REG=$2
e2e_start_server
TTL=3
"$REG" --endpoints="$EP" watch api >"$E2E_DIR/watch" 2>&1 & WATCHER=$!
"$REG" --endpoints="$EP" register api one 10.0.0.1:80 --ttl=$TTL >"$E2E_DIR/one" 2>&1 & ONE=$!
"$REG" --endpoints="$EP" register api two 10.0.0.2:80 --ttl=$TTL >"$E2E_DIR/two" 2>&1 & TWO=$!
for _ in $(seq 1 50); do [ -s "$E2E_DIR/one" ] && [ -s "$E2E_DIR/two" ] && break; sleep 0.1; done
check_match "register prints its key and lease" "^registered services/api/one lease [0-9]+$" "$(cat "$E2E_DIR/one")"
sleep $((TTL + 1))
run_ctl get services/api/ --prefix --keys-only
check "both instances outlive their TTL while alive" "$(printf 'services/api/one\n\nservices/api/two')" "$OUT"

kill -INT "$TWO"; wait "$TWO"; RC=$?
check "SIGINT deregisters and exits 0" 0 "$RC"
sleep 0.3
check_match "the watcher saw 'two' leave at once" "down two" "$(cat "$E2E_DIR/watch")"

KILLED_MS=$(date +%s%3N)
kill -9 "$ONE"
for _ in $(seq 1 100); do grep -q "down one" "$E2E_DIR/watch" && break; sleep 0.1; done
DOWN_MS=$(awk '$2 == "down" && $3 == "one" {print $1}' "$E2E_DIR/watch")
if [ -n "$DOWN_MS" ]; then
  GONE=$((DOWN_MS - KILLED_MS))
  echo "  instance killed -9: gone from the watch after ${GONE} ms (TTL ${TTL} s)"
  # Renewals run every TTL/3, so the lease has between 2/3 TTL and TTL left at the kill; then the
  # leader revokes it within an election timeout (1 s).
  if [ "$GONE" -ge $((TTL * 2000 / 3 - 200)) ] && [ "$GONE" -le $((TTL * 1000 + 1000 + 300)) ]; then
    pass "a killed instance vanishes within TTL + the expiry bound"
  else
    fail "a killed instance vanishes within TTL + the expiry bound" "${GONE} ms"
  fi
else
  fail "a killed instance vanishes" "$(cat "$E2E_DIR/watch")"
fi
run_ctl get services/api/ --prefix --keys-only
check "no instance left" "" "$OUT"
# Registered before or after the watcher listed: in its initial list, or as an "up" change.
check_match "the watcher saw 'one' with its address" "(instance|up) one 10.0.0.1:80" "$(cat "$E2E_DIR/watch")"
check_match "the watcher saw 'two' with its address" "(instance|up) two 10.0.0.2:80" "$(cat "$E2E_DIR/watch")"
kill "$WATCHER" 2>/dev/null
e2e_finish
