#!/usr/bin/env bash
# A real network partition: three members, each in its own network namespace on a bridge. The
# leader's link is cut: on its side writes and linearizable reads fail with etcd's errors and
# keep-alives stop being answered before the majority elects a new leader; the majority goes on;
# after healing, the old leader follows and converges. Skipped (exit 77) where namespaces cannot
# be made.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/netns_lib.sh"
e2e_plan 14
netns_setup
netns_start_members "$LEASEHOLD_BIN"
now() { date +%s.%N; }
inside() { local i=$1; shift; ip netns exec "$TAG-$i" timeout 20 etcdctl --endpoints=127.0.0.1:2379 --dial-timeout=2s --command-timeout=3s "$@"; }
L=""; for _ in $(seq 1 100); do L=$(leader_among 1 2 3); [ -n "$L" ] && break; sleep 0.1; done
check_match "a leader is elected across namespaces" "^[123]$" "$L"
A=$(( L % 3 + 1 )); B=$(( A % 3 + 1 ))
at "$A" put before 1 >/dev/null
ID=$(inside "$L" lease grant 5 | awk '{print $2}')
inside "$L" put held 1 --lease="$ID" >/dev/null
# A client on the leader's side of the cut renews every 50 ms and notes when each answer came.
( for _ in $(seq 1 300); do
    OUT=$(ip netns exec "$TAG-$L" timeout 1 etcdctl --endpoints=127.0.0.1:2379 --dial-timeout=1s --command-timeout=1s \
      lease keep-alive --once "$ID" 2>/dev/null) && echo "$(now) $OUT"
    sleep 0.05
  done ) >"$E2E_DIR/keepalive" &
RENEWER=$!
sleep 1.5

T_CUT=$(now); ip link set "${TAG}v$L" down
NEW=""; for _ in $(seq 1 100); do NEW=$(leader_among "$A" "$B"); [ -n "$NEW" ] && break; sleep 0.05; done
T_ELECTED=$(now)
check_match "the majority elects a new leader" "^[$A$B]$" "$NEW"
sleep 1; kill "$RENEWER" 2>/dev/null; wait "$RENEWER" 2>/dev/null
LAST_KA=$(grep keepalived "$E2E_DIR/keepalive" | tail -1 | cut -d' ' -f1)
check "the cut-off leader renewed until the cut" 1 "$(echo "$LAST_KA > $T_CUT - 0.5" | bc)"
check "... and stopped before the new leader was elected (last answer $(echo "$LAST_KA - $T_CUT" | bc | cut -c1-5) s after the cut, election $(echo "$T_ELECTED - $T_CUT" | bc | cut -c1-5) s)" 1 \
  "$(echo "$LAST_KA < $T_ELECTED" | bc)"
OUT=$(inside "$L" put cut 1 2>&1); RC=$?
check "minority: put fails" 1 "$RC"
check_match "minority: put error" "Error: (etcdserver: (no leader|request timed out)|context deadline exceeded)" "$OUT"
OUT=$(inside "$L" get before 2>&1); RC=$?
check "minority: linearizable get fails" 1 "$RC"
OUT=$(inside "$L" get before --consistency=s --keys-only 2>"$E2E_DIR/serializable.err" | head -1)
check "minority: serializable get served" "before" "$OUT"
# A failure once showed nothing at all: say what etcdctl said.
[ "$OUT" = before ] || echo "note - etcdctl's stderr: $(cat "$E2E_DIR/serializable.err")"
check "majority: put succeeds" "OK" "$(at "$A" put majority 1 2>&1)"
# The lease's keep-alives are stranded with the old leader: the majority revokes it.
for _ in $(seq 1 100); do [ -z "$(at "$A" get held --keys-only 2>/dev/null)" ] && break; sleep 0.1; done
check "majority revokes the stranded lease" "" "$(at "$A" get held --keys-only)"

ip link set "${TAG}v$L" up
for _ in $(seq 1 100); do [ -n "$(at "$L" get majority --consistency=s --keys-only 2>/dev/null)" ] && break; sleep 0.1; done
check "healed: the old leader has the majority's write" "majority" "$(at "$L" get majority --consistency=s --keys-only | head -1)"
check "healed: the old leader follows" "$NEW" "$(leader_among 1 2 3)"
check "healed: the minority's refused write is nowhere" "" "$(at "$L" get cut --keys-only)"
check "healed: the revoked lease is gone everywhere" "" "$(at "$L" get held --keys-only --consistency=s)"
e2e_finish
