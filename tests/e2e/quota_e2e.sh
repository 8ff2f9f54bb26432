#!/usr/bin/env bash
# The space quota end to end: writes past --quota-backend-bytes raise NOSPACE (etcd's error, the
# alarm in `alarm list`, `endpoint status` and /health), which refuses growth but not deletes; compact, defrag
# and `alarm disarm` bring writes back; the alarm survives a restart.
source "$(dirname "$0")/lib.sh"
e2e_plan 15

e2e_start_server --quota-backend-bytes=300000
VALUE=$(head -c 60000 /dev/zero | tr '\0' 'x')
REFUSED=""
for i in $(seq 1 40); do
  run_ctl put "k$i" "$VALUE"
  if [ "$RC" -ne 0 ]; then REFUSED=$ERR; break; fi
done
check "a write past the quota is refused with etcd's error" "Error: etcdserver: mvcc: database space exceeded" "$REFUSED"
MEMBER_DEC=$(ctl endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["member_id"])')
run_ctl alarm list
check "alarm list shows NOSPACE for this member" "memberID:$MEMBER_DEC alarm:NOSPACE " "$OUT"
run_ctl endpoint status
check_match "endpoint status lists the alarm as an error" "alarm:NOSPACE" "$OUT"
health() { curl -s -m 10 -w ' %{http_code}' "http://$EP/health"; }
check "while raised, /health says false, as etcd's does" '{"health":"false"} 503' "$(health)"
run_ctl put small v
check "while raised, even a small put is refused" "Error: etcdserver: mvcc: database space exceeded" "$ERR"
run_ctl lease grant 10
check "and a lease grant" "Error: failed to grant lease (etcdserver: mvcc: database space exceeded)" "$ERR"
run_ctl txn <<<$'\nput t v\n\n'
check "and a transaction that writes" "Error: etcdserver: mvcc: database space exceeded" "$ERR"
run_ctl get k1 --keys-only
check "reads still work" "k1" "$OUT"
run_ctl del k1
check "deletes still work" "1" "$OUT"

e2e_stop_server
e2e_start_server --quota-backend-bytes=300000
run_ctl alarm list
check "the alarm survives a restart" "memberID:$MEMBER_DEC alarm:NOSPACE " "$OUT"

REV=$(ctl get k2 -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])')
for i in $(seq 2 40); do ctl del "k$i" >/dev/null 2>&1; done
ctl compact "$REV" >/dev/null
ctl defrag >/dev/null
run_ctl alarm disarm
check "alarm disarm answers the alarm it cleared" "memberID:$MEMBER_DEC alarm:NOSPACE " "$OUT"
run_ctl alarm list
check "no alarm is left" "" "$OUT"
run_ctl put after v
check "writes work again" "OK" "$OUT"
check "and /health says true again" '{"health":"true"} 200' "$(health)"
e2e_stop_server
e2e_start_server --quota-backend-bytes=-1
for i in $(seq 1 10); do ctl put "big$i" "$VALUE" >/dev/null || fail "put $i without a quota"; done
run_ctl alarm list
check "a negative quota turns the quota off" "" "$OUT"
e2e_finish
