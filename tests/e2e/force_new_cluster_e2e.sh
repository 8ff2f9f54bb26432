#!/usr/bin/env bash
# etcd's --force-new-cluster, the way its disaster-recovery guide uses it: a 3-member cluster loses
# two members for good; the survivor, restarted with the flag, becomes a one-member cluster with
# all its committed data (and leases), leads at once and takes writes; what its log held beyond the
# commit index (a write no quorum ever accepted) is discarded; it stays a one-member cluster when
# restarted without the flag; and an old member that comes back is refused and stops.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cluster_lib.sh"
e2e_plan 15

cluster_start 3
L=$(leader_index)
ctl_at "$L" put committed yes >/dev/null
LEASE=$(ctl_at "$L" lease grant 600 | awk '{print $2}')
ctl_at "$L" put --lease="$LEASE" leased yes >/dev/null
CLUSTER_ID=$(ctl_at "$L" member list -w json | python3 -c 'import json, sys; print("%x" % json.load(sys.stdin)["header"]["cluster_id"])')
SELF_ID=$(ctl_at "$L" endpoint status | awk -F', ' '{print $2}')
# The two others are lost; a write the leader appends now can never commit.
for i in 1 2 3; do [ "$i" = "$L" ] || member_stop "$i" KILL; done
timeout 20 etcdctl --endpoints="$(ep "$L")" --dial-timeout=2s --command-timeout=1s put uncommitted no >/dev/null 2>&1
member_stop "$L" KILL

member_start "$L" --force-new-cluster
for _ in $(seq 1 100); do ctl_at "$L" endpoint status 2>/dev/null | grep -q ", true, " && break; sleep 0.1; done
check_match "the forced member leads alone" "^127\.0\.0\.1:${CPORT[$L]}, $SELF_ID, [^,]+, [^,]+, true, false, " "$(ctl_at "$L" endpoint status 2>&1)"
check "member list: itself only" "$SELF_ID, started, m$L, http://127.0.0.1:${PPORT[$L]}, http://127.0.0.1:${CPORT[$L]}, false" \
  "$(ctl_at "$L" member list 2>&1)"
check "same cluster id" "$CLUSTER_ID" \
  "$(ctl_at "$L" member list -w json | python3 -c 'import json, sys; print("%x" % json.load(sys.stdin)["header"]["cluster_id"])')"
check "committed data kept" "yes yes" "$(ctl_at "$L" get committed --print-value-only) $(ctl_at "$L" get leased --print-value-only)"
check_match "the lease too" "^lease [0-9a-f]+ granted with TTL\(600s\), remaining\([0-9]+s\)$" "$(ctl_at "$L" lease timetolive "$LEASE")"
check "the write no quorum accepted is gone" "" "$(ctl_at "$L" get uncommitted 2>&1)"
check "it takes writes" "OK" "$(ctl_at "$L" put after-force 1 2>&1)"
check "the log says it discarded the uncommitted entry" 1 "$(grep -c '"msg":"discarding uncommitted WAL entries"' "$E2E_DIR/m$L.log")"
check "and that it forced a restart" 1 "$(grep -c '"msg":"forcing restart member"' "$E2E_DIR/m$L.log")"

# Restarted without the flag, it is still the cluster's only member.
member_stop "$L"
member_start "$L"
for _ in $(seq 1 100); do [ "$(ctl_at "$L" put after-restart 1 2>/dev/null)" = OK ] && break; sleep 0.1; done
check "restarted without the flag: it takes writes alone" "OK" "$(ctl_at "$L" put after-restart 2 2>&1)"
check "still one member" 1 "$(ctl_at "$L" member list | wc -l)"
check "data kept" "yes 1" "$(ctl_at "$L" get committed --print-value-only) $(ctl_at "$L" get after-force --print-value-only)"

# An old member started on its old data is refused by the survivor and stops, as etcd's does.
O=$(( L % 3 + 1 ))
member_start "$O"
for _ in $(seq 1 150); do kill -0 "${CPID[$O]}" 2>/dev/null || break; sleep 0.1; done
check "an old member that comes back stops" 1 "$(kill -0 "${CPID[$O]}" 2>/dev/null && echo 0 || echo 1)"
member_stop "$O" KILL
check "it says why" 1 "$(grep -c '"msg":"the member has been permanently removed from the cluster"' "$E2E_DIR/m$O.log")"
check "the survivor still takes writes" "OK" "$(ctl_at "$L" put final 1 2>&1)"
e2e_finish
