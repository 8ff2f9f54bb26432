#!/usr/bin/env bash
# etcd 3.5/3.6 clients' additions, on the wire (tests/etcd36/etcd36_api.py: raw gRPC by field
# number) and through the gateway: StatusResponse 11-13, HashKVResponse.hash_revision,
# SnapshotResponse.version, Maintenance.Downgrade with etcd's refusals, a linearizable member list,
# /livez and /readyz; and etcd 3.4's etcdctl still reading the same answers.
source "$(dirname "$0")/lib.sh"
e2e_plan 16
PY=/usr/bin/python3  # Debian's, with python3-grpcio
e2e_start_server
OUT=$($PY "$(dirname "$0")/../etcd36/etcd36_api.py" "$EP" 2>&1)
field() { $PY -c 'import json, sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1" <<<"$OUT" 2>&1; }
check "StatusResponse.storageVersion: the API version served" 3.4.0 "$(field 'status.storageVersion(11)')"
check "StatusResponse.dbSizeQuota: etcd's default quota" 2147483648 "$(field 'status.dbSizeQuota(12)')"
check "StatusResponse.downgradeInfo: present, not enabled" "True False" \
  "$(field 'status.downgradeInfo(13) present') $(field 'status.downgradeInfo.enabled')"
check "HashKVResponse.hash_revision: the revision hashed" "True True" \
  "$(field 'hashkv.hash_revision(4) at the current revision') $(field 'hashkv.hash_revision(4) at an earlier revision')"
check "SnapshotResponse.version in every message" "['3.4.23']" "$(field 'snapshot.version(4) in every message')"
check "Downgrade: no target is valid (one API version)" \
  "INVALID_ARGUMENT etcdserver: invalid downgrade target version|INVALID_ARGUMENT etcdserver: invalid downgrade target version" \
  "$(field 'downgrade validate 3.3')|$(field 'downgrade enable 3.3.0')"
check "Downgrade: etcd's format, cancel and unknown-action refusals" \
  "INVALID_ARGUMENT etcdserver: wrong downgrade target version format|FAILED_PRECONDITION etcdserver: no inflight downgrade job|UNKNOWN etcdserver: unknown method" \
  "$(field 'downgrade validate x.y')|$(field 'downgrade cancel')|$(field 'downgrade unknown action')"
check "MemberList with linearizable" 1 "$(field 'memberlist linearizable')"
check "AuthStatus: off, then on with a revision" "[False, 0] [True, True]" \
  "$(field 'authstatus before') $(field 'authstatus after')"
check "UserAdd with hashedPassword (3.5): that password authenticates" "None None True" \
  "$(field 'useradd hashedPassword') $(field 'auth enable') $(field 'authenticate with the hashed password')"
gw() { curl -s -X POST "http://$EP/v3/$1" -d "$2"; }
check_match "gateway /v3/maintenance/hashkv" '"hash_revision":"[0-9]+"' "$(gw maintenance/hashkv '{}')"
check "gateway /v3/maintenance/downgrade: etcd's error" \
  '{"error":"etcdserver: no inflight downgrade job","message":"etcdserver: no inflight downgrade job","code":9}' \
  "$(gw maintenance/downgrade '{"action":"CANCEL"}')"
check "/livez and /readyz" "ok ok" "$(curl -s "http://$EP/livez") $(curl -s "http://$EP/readyz")"
check "/readyz?verbose lists etcd's checks" \
  "$(printf '[+]data_corruption ok\n[+]serializable_read ok\n[+]linearizable_read ok\nreadyz check passed')" \
  "$(curl -s "http://$EP/readyz?verbose")"
check "?exclude skips a check" "[+]serializable_read excluded: ok" \
  "$(curl -s "http://$EP/livez?verbose&exclude=serializable_read" | head -1)"
# etcd 3.4's etcdctl reads the extended answers as before.
run_ctl endpoint status -w json
check_match "etcdctl 3.4 endpoint status unchanged" '"version":"3.4.23","dbSize":[0-9]+' "$OUT"
e2e_finish
