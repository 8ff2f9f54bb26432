#!/usr/bin/env bash
# Each write applies at most once while members fail: twelve writers through etcd's own Go client
# (tests/go_write_once), each with all three endpoints and a 2 s timeout per call, put values no
# other call writes, while one member at a time, for 3-6 s, has its peer traffic dropped
# (connections held, nothing reset), or all its traffic dropped, or is killed (SIGKILL) and then
# restarted. The whole history is then read back: no value may appear at two revisions, and every
# acknowledged one must be there.
#
# etcd's Go client re-sends any call, a Put included, whose answer is DeadlineExceeded or Cancelled
# while its own deadline has not passed; a server that gives it that answer for a write still
# pending (gRPC's own deadline firing a moment before the client's) gets the write twice. See
# docs/client-retries.md.
#
# usage: write_once_e2e.sh LEASEHOLD_BINARY [--etcd]  (--etcd runs the same against Debian's etcd)
# WRITE_ONCE_SEED replays the writers' load and the fault schedule; WRITE_ONCE_SECONDS sets how long
# the writers run (default 36; a campaign: 600); WRITE_ONCE_NEMESIS the faults drawn from (default
# stall,stall,isolate,kill). Skipped (exit 77) where namespaces cannot be made.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/netns_lib.sh"
ROOT="$(dirname "$0")/../.."
SEED="${WRITE_ONCE_SEED:-$(date +%s)}"
SECONDS_OF_WRITES="${WRITE_ONCE_SECONDS:-36}"
echo "seed $SEED (WRITE_ONCE_SEED=$SEED replays the load and the fault schedule)"
RANDOM=$SEED
e2e_plan 8
SERVER="$LEASEHOLD_BIN"; [ "${2:-}" = "--etcd" ] && SERVER=$(command -v etcd)

if ! "$ROOT/scripts/go-build.sh" "$ROOT/tests/go_write_once" "$E2E_DIR/write-once" >"$E2E_DIR/go-build.log" 2>&1; then
  fail "the Go writers build" "$(tail -20 "$E2E_DIR/go-build.log")"
  e2e_finish; exit
fi
netns_setup
netns_start_members "$SERVER"
L=""; for _ in $(seq 1 100); do L=$(leader_among 1 2 3); [ -n "$L" ] && break; sleep 0.1; done
check_match "a leader is elected" "^[123]$" "$L"

# The faults, each on one member at a time: "stall" drops its peer traffic both ways (the
# connections stay open and TCP delivers what was sent once the rules go), "isolate" drops all its
# traffic, clients' included, and "kill" kills it with SIGKILL and restarts it on its data.
stall() { for chain in INPUT OUTPUT; do for dir in --dport --sport; do
  ip netns exec "$TAG-$1" iptables -I "$chain" -p tcp "$dir" 2380 -j DROP; done; done; }
isolate() { ip netns exec "$TAG-$1" iptables -I INPUT -i eth0 -j DROP; ip netns exec "$TAG-$1" iptables -I OUTPUT -o eth0 -j DROP; }
heal() { ip netns exec "$TAG-$1" iptables -F; }
kill_member() { kill -9 "${MEMBER_PID[$1]}" 2>/dev/null; wait "${MEMBER_PID[$1]}" 2>/dev/null; }
IFS=, read -r -a NEMESES <<<"${WRITE_ONCE_NEMESIS:-stall,stall,isolate,kill}"

"$E2E_DIR/write-once" --endpoints "$NET.1:2379,$NET.2:2379,$NET.3:2379" --writers 12 --keys 20 --timeout 2s \
  --duration "${SECONDS_OF_WRITES}s" --settle 5s --seed "$SEED" >"$E2E_DIR/result.json" 2>"$E2E_DIR/writers.err" &
WRITERS=$!
END=$(( $(date +%s) + SECONDS_OF_WRITES - 3 ))

sleep 2
declare -A FAULTS
while [ "$(date +%s)" -lt "$END" ]; do
  m=$(( RANDOM % 3 + 1 )); kind=${NEMESES[$(( RANDOM % ${#NEMESES[@]} ))]}
  FAULTS[$kind]=$(( ${FAULTS[$kind]:-0} + 1 ))
  case "$kind" in
    stall) stall "$m" ;;
    isolate) isolate "$m" ;;
    kill) kill_member "$m" ;;
    *) echo "unknown fault $kind"; exit 2 ;;
  esac
  sleep $(( RANDOM % 4 + 3 ))
  if [ "$kind" = kill ]; then netns_start_member "$SERVER" "$m"; else heal "$m"; fi
  sleep 2
done
STALLS=$(for k in "${!FAULTS[@]}"; do printf '%s %s, ' "${FAULTS[$k]}" "$k"; done)
wait "$WRITERS"; RC=$?
check "the writers ran and read the history back (faults: ${STALLS%, })" 0 "$RC"
[ "$RC" -eq 0 ] || echo "       $(tail -5 "$E2E_DIR/writers.err")"
field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$E2E_DIR/result.json" "$1" 2>/dev/null; }
echo "result: $(cat "$E2E_DIR/result.json" 2>/dev/null)"
SUCCEEDED=$(field succeeded); FAILED_CALLS=$(python3 -c 'import json, sys
print(sum(json.load(open(sys.argv[1]))["errors"].values()))' "$E2E_DIR/result.json" 2>/dev/null)
check_match "writes went through ($SUCCEEDED)" "^[1-9][0-9]{2,}$" "$SUCCEEDED"
check_match "the faults made calls fail ($FAILED_CALLS)" "^[1-9][0-9]*$" "$FAILED_CALLS"
check "no value was applied twice" 0 "$(field applied_twice)"
check "every acknowledged value is in the history" 0 "$(field acked_missing)"
alive=0; for i in 1 2 3; do kill -0 "${MEMBER_PID[$i]}" 2>/dev/null && alive=$((alive + 1)); done
check "every member still runs" 3 "$alive"
revisions() { timeout 20 etcdctl --endpoints="$NET.1:2379,$NET.2:2379,$NET.3:2379" --dial-timeout=2s endpoint status -w json 2>/dev/null |
  python3 -c 'import json, sys; print(len({s["Status"]["header"]["revision"] for s in json.load(sys.stdin)}))' 2>/dev/null; }
for _ in $(seq 1 50); do E=$(revisions); [ "$E" = 1 ] && break; sleep 0.2; done
check "the members agree on the revision" 1 "$E"
e2e_finish
