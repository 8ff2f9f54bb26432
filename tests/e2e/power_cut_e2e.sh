#!/usr/bin/env bash
# Power cuts (LEASEHOLD_FAULT_POWER_CUT): a member loses everything it wrote but never synced, torn
# at a random byte, and stops at once. Single node: cut at a random write operation (sometimes
# while it recovers from the previous cut), under writers of three-key transactions and leases;
# after a plain restart every acknowledged write and lease is there and nothing is half-applied.
# Three members: the leader, then a follower, cut while the writers go on against the others;
# restarted, it rejoins, serves the same checks itself, and ends with the others' KV hash.
# LEASEHOLD_TEST_SEED replays the cut points.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cluster_lib.sh"
CLIENT="${2:?usage: $0 leasehold power_cut_client}"
SEED=${LEASEHOLD_TEST_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "seed $SEED (LEASEHOLD_TEST_SEED=$SEED replays the cut points)"
RANDOM=$((SEED % 32768))
ROUNDS=5
CLUSTER_ROUNDS=2
e2e_plan $((ROUNDS * 5 + CLUSTER_ROUNDS * 6))
CUT_EXIT=86
ACKED="$E2E_DIR/acked"

# The checker's lines as checks of this script.
checked() { # label checker-output
  while IFS= read -r line; do
    case "$line" in
      "ok   - "*) pass "$1: ${line#ok   - }" ;;
      "FAIL - "*) fail "$1: ${line#FAIL - }" ;;
    esac
  done <<<"$2"
}

for round in $(seq 1 "$ROUNDS"); do
  # One round in four cuts while the node opens and recovers; the rest while it serves writes.
  if [ $((RANDOM % 4)) -eq 0 ]; then OP=$((1 + RANDOM % 80)); else OP=$((100 + RANDOM % 4000)); fi
  LEASEHOLD_FAULT_POWER_CUT="op=$OP,seed=$RANDOM" "$LEASEHOLD_BIN" --name e2e --data-dir "$E2E_DIR/data" \
    --listen-client-urls "http://$EP" --listen-peer-urls "http://127.0.0.1:$PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" >>"$E2E_DIR/server.log" 2>&1 &
  CUT_PID=$!
  "$CLIENT" write --endpoints="$EP" --acked="$ACKED" --round="$round" --seconds=60 &
  WRITER=$!
  while kill -0 "$CUT_PID" 2>/dev/null && kill -0 "$WRITER" 2>/dev/null; do sleep 0.2; done
  kill -9 "$CUT_PID" 2>/dev/null  # the writers ran out before the cut came: the check below fails
  wait "$CUT_PID"; RC=$?
  kill "$WRITER" 2>/dev/null; wait "$WRITER" 2>/dev/null
  check "round $round: the power went at write operation $OP" "$CUT_EXIT" "$RC"
  grep -h "power cut" "$E2E_DIR/server.log" | tail -n 1
  e2e_start_server
  checked "round $round" "$("$CLIENT" check --endpoints="$EP" --acked="$ACKED")"
  e2e_stop_server TERM
done

# Three members; the victim runs with the fault armed for SIGUSR2.
cluster_start 3
hashes() { for i in $(seq 1 "$CLUSTER_N"); do ctl_at "$i" endpoint hashkv -w json | grep -o '"hash":[0-9]*'; done | sort -u | wc -l; }
for round in $(seq 1 "$CLUSTER_ROUNDS"); do
  LEADER=$(leader_index)
  if [ "$round" -eq 1 ]; then VICTIM=$LEADER; ROLE=leader; else VICTIM=$((LEADER % 3 + 1)); ROLE=follower; fi
  member_stop "$VICTIM" TERM
  LEASEHOLD_FAULT_POWER_CUT="signal,seed=$RANDOM" member_start "$VICTIM"
  cluster_await
  ACKED="$E2E_DIR/acked-cluster-$round"
  "$CLIENT" write --endpoints="$(all_eps)" --acked="$ACKED" --round="c$round" --seconds=60 &
  WRITER=$!
  sleep "$((1 + RANDOM % 3)).$((RANDOM % 10))"
  kill -USR2 "${CPID[$VICTIM]}"
  for _ in $(seq 1 100); do kill -0 "${CPID[$VICTIM]}" 2>/dev/null || break; sleep 0.1; done
  kill -9 "${CPID[$VICTIM]}" 2>/dev/null  # no write came within 10 s: the check below fails
  wait "${CPID[$VICTIM]}"; RC=$?
  CPID[$VICTIM]=""
  sleep 1  # the others go on without it
  kill "$WRITER" 2>/dev/null; wait "$WRITER" 2>/dev/null
  check "cluster round $round: the $ROLE lost power" "$CUT_EXIT" "$RC"
  grep -h "power cut" "$E2E_DIR/m$VICTIM.log" | tail -n 1
  member_start "$VICTIM"
  cluster_await
  # Answered by the member that lost power: it rejoined and caught up.
  checked "cluster round $round, on the restarted $ROLE" \
    "$("$CLIENT" check --endpoints="$(ep "$VICTIM")" --acked="$ACKED")"
  for _ in $(seq 1 50); do [ "$(hashes)" = 1 ] && break; sleep 0.2; done
  check "cluster round $round: all members end with one KV hash" 1 "$(hashes)"
done
cluster_stop_all
e2e_finish
