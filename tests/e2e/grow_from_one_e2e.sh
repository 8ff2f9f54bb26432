#!/usr/bin/env bash
# The way etcd's docs grow a cluster from one member and shrink it back, with Debian's etcdctl:
# `member add` on a sole member answers at once (its new second voter is not started yet, so the
# cluster has no quorum until it is), the new member joins, and removing the leader leaves the other
# member leading and taking writes; the removed member, started again, refuses to serve; and a
# member removed while it was down is refused by its peers when it comes back, and stops.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cluster_lib.sh"
e2e_plan 19
run_ctl_at() { OUT=$(ctl_at "$@" 2>"$E2E_DIR/err"); RC=$?; ERR=$(grep -v '"level":"warn"' "$E2E_DIR/err"); }

cluster_start 1
ctl_at 1 put before-growth 1 >/dev/null
CLUSTER_N=2; CPORT[2]=$(free_port); PPORT[2]=$(free_port); MPORT[2]=$(free_port)
START=$(date +%s%N)
run_ctl_at 1 member add m2 --peer-urls="http://127.0.0.1:${PPORT[2]}"
ELAPSED_MS=$(( ($(date +%s%N) - START) / 1000000 ))
check_match "member add on a sole member" "^Member +[0-9a-f]+ added to cluster +[0-9a-f]+" "${OUT:-$ERR}"
M1="m1=http://127.0.0.1:${PPORT[1]}" M2="m2=http://127.0.0.1:${PPORT[2]}"  # listed in member id order
check_match "member add prints the new cluster" "ETCD_INITIAL_CLUSTER=\"($M1,$M2|$M2,$M1)\"" "$OUT"
# etcd answers once the change is applied; waiting for a quorum read here would wait for m2.
check "member add answers at once (${ELAPSED_MS} ms)" 1 "$([ "$ELAPSED_MS" -lt 2000 ] && echo 1 || echo 0)"

member_start 2 --initial-cluster-state existing
for _ in $(seq 1 100); do [ "$(ctl_at 2 put joined 1 2>/dev/null)" = OK ] && break; sleep 0.1; done
check "the new member takes writes" "OK" "$(ctl_at 2 put joined 2 2>&1)"
check "it has what was written before it joined" "before-growth" "$(ctl_at 2 get before-growth --keys-only | head -1)"
check "member list: two members" 2 "$(ctl_at 1 member list | wc -l)"

# Remove the leader: the change commits with both members, the leader steps away, and the other
# member elects itself alone.
L=$(leader_index); O=$(( L % 2 + 1 ))
LEADER_ID=$(ctl_at "$L" endpoint status | awk -F', ' '{print $2}')
run_ctl_at "$L" member remove "$LEADER_ID"
check "removing the leader" "Member $LEADER_ID removed from cluster" "$(awk '{print $1, $2, $3, $4, $5}' <<<"${OUT:-$ERR}")"
for _ in $(seq 1 50); do kill -0 "${CPID[$L]}" 2>/dev/null || break; sleep 0.1; done
check "the removed leader shuts down" 1 "$(kill -0 "${CPID[$L]}" 2>/dev/null && echo 0 || echo 1)"
CPID[$L]=""
for _ in $(seq 1 100); do [ "$(ctl_at "$O" put after-shrink 1 2>/dev/null)" = OK ] && break; sleep 0.1; done
check "the other member takes writes alone" "OK" "$(ctl_at "$O" put after-shrink 2 2>&1)"
check_match "it leads" ", true, false, " "$(ctl_at "$O" endpoint status)"
check "member list: one member" 1 "$(ctl_at "$O" member list | wc -l)"

# The removed member, started again on its old data, refuses to serve, as etcd's does.
"$LEASEHOLD_BIN" $(cluster_flags "$L") --initial-cluster-state existing >>"$E2E_DIR/m$L.log" 2>&1 &
RESTARTED=$!
for _ in $(seq 1 100); do kill -0 "$RESTARTED" 2>/dev/null || break; sleep 0.1; done
kill -9 "$RESTARTED" 2>/dev/null  # still serving after 10 s: the check below fails, the test goes on
wait "$RESTARTED" 2>/dev/null; RC=$?
check "the removed member, restarted, exits with an error" 1 "$RC"
check "it says why" 1 "$(grep -c '"msg":"the member has been permanently removed from the cluster"' "$E2E_DIR/m$L.log")"
check "the other member still takes writes" "OK" "$(ctl_at "$O" put after-restart 1 2>&1)"

# Grow to three again, then remove a member while it is down: it never applies its removal, so
# when it comes back its peers refuse it (etcd's 410 Gone) and it stops.
add_member() { # i: adds and starts member i through member O
  CLUSTER_N=$1; CPORT[$1]=$(free_port); PPORT[$1]=$(free_port); MPORT[$1]=$(free_port)
  ctl_at "$O" member add "m$1" --peer-urls="http://127.0.0.1:${PPORT[$1]}" >/dev/null
  # Its --initial-cluster: the current members and itself (the removed one is gone).
  local initial="" id url
  while IFS=', ' read -r id _ name url _; do initial+="${initial:+,}$name=$url"; done < <(ctl_at "$O" member list | grep -v ', unstarted, ')
  initial+=",m$1=http://127.0.0.1:${PPORT[$1]}"
  # shellcheck disable=SC2046
  "$LEASEHOLD_BIN" $(cluster_flags "$1" | sed "s|--initial-cluster [^ ]*|--initial-cluster $initial|") \
    --initial-cluster-state existing >>"$E2E_DIR/m$1.log" 2>&1 &
  CPID[$1]=$!
  for _ in $(seq 1 100); do [ "$(ctl_at "$1" put "joined-$1" 1 2>/dev/null)" = OK ] && break; sleep 0.1; done
}
add_member 3
sleep 6  # a voter is added only while every voter has been active a while (etcd's check)
add_member 4
check "three members again" 3 "$(ctl_at "$O" member list | grep -c ', started, ')"
DOWN_ID=$(ctl_at 4 endpoint status | awk -F', ' '{print $2}')
member_stop 4 KILL
run_ctl_at "$O" member remove "$DOWN_ID"
check "removing a member that is down" "Member $DOWN_ID removed from cluster" "$(awk '{print $1, $2, $3, $4, $5}' <<<"${OUT:-$ERR}")"
# shellcheck disable=SC2046
"$LEASEHOLD_BIN" $(cluster_flags 4) --initial-cluster-state existing >>"$E2E_DIR/m4.log" 2>&1 &
RESTARTED=$!
for _ in $(seq 1 100); do kill -0 "$RESTARTED" 2>/dev/null || break; sleep 0.1; done
check "the member removed while down stops once its peers refuse it" 1 "$(kill -0 "$RESTARTED" 2>/dev/null && echo 0 || echo 1)"
kill -9 "$RESTARTED" 2>/dev/null
wait "$RESTARTED" 2>/dev/null
check "it says why" 1 "$(grep -c '"msg":"the member has been permanently removed from the cluster"' "$E2E_DIR/m4.log")"
check "the two others take writes" "OK OK" "$(ctl_at "$O" put final 1 2>&1) $(ctl_at 3 put final 2 2>&1)"
e2e_finish
