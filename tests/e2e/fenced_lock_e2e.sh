#!/usr/bin/env bash
# 16 processes contend for one leasehold::Mutex and write a register guarded by their fencing token
# while this script pauses random ones (SIGSTOP) for longer than their lease TTL, then resumes them:
# a woken holder's write must be refused, and the register's accepted writes must never go back to
# a lower token. Also runs examples/fenced_write (the seed's GC-pause scenario).
# usage: fenced_lock_e2e.sh <leasehold> <fenced_contender> <fenced_write>
source "$(dirname "$0")/lib.sh"
e2e_plan 5
CONTENDER=$2
FENCED_WRITE=$3
e2e_start_server
N=16; DURATION=20; TTL=2
PIDS=()
for i in $(seq 1 $N); do
  "$CONTENDER" --endpoints="$EP" --id="$i" --duration="$DURATION" --ttl="$TTL" --work-ms=150 \
    --holder-file="$E2E_DIR/holder" >"$E2E_DIR/contender.$i" 2>&1 &
  PIDS+=($!)
done
# Over and over: pause the current holder (each contender writes its pid to $E2E_DIR/holder when it
# takes the lock) and one random contender for 2.5-3.5 s (> TTL), then resume them.
END=$(( $(date +%s) + DURATION - 4 ))
PAUSES=0
while [ "$(date +%s)" -lt "$END" ]; do
  HOLDER=$(cat "$E2E_DIR/holder" 2>/dev/null)
  OTHER=${PIDS[$((RANDOM % N))]}
  kill -STOP $HOLDER "$OTHER" 2>/dev/null
  sleep "$(( 25 + RANDOM % 11 ))e-1"
  kill -CONT $HOLDER "$OTHER" 2>/dev/null
  PAUSES=$((PAUSES + 1))
  sleep 1  # let the lock change hands a few times between pauses
done
for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; done
FAILED_PROCS=0
for p in "${PIDS[@]}"; do wait "$p" || FAILED_PROCS=$((FAILED_PROCS + 1)); done
check "every contender exits cleanly" 0 "$FAILED_PROCS"
read -r ACQ ACC REF < <(cat "$E2E_DIR"/contender.* | awk '/^acquired/ {a+=$2; w+=$4; r+=$6} END {print a, w, r}')
echo "  $PAUSES pauses; $ACQ acquisitions, $ACC writes accepted, $REF stale writes refused"
if [ "${ACC:-0}" -ge 30 ]; then pass "the lock changed hands often ($ACC accepted writes)"; else fail "the lock changed hands often" "$ACC"; fi
if [ "${REF:-0}" -ge 1 ]; then pass "paused holders woke and were fenced off ($REF refused)"; else fail "paused holders were fenced off" "$REF refused"; fi
OUT=$("$CONTENDER" --endpoints="$EP" --check 2>&1); RC=$?
check "accepted writes never go back to a lower token" 0 "$RC"
echo "  $OUT"

OUT=$("$FENCED_WRITE" --endpoints="$EP" --ttl=2 2>&1); RC=$?
check "examples/fenced_write: the stale holder's writes are refused" 0 "$RC"
echo "$OUT" | sed 's/^/  /'
e2e_finish
