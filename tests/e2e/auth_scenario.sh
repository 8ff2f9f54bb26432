#!/usr/bin/env bash
# etcdctl's v3 auth commands against one endpoint ($1), for auth_e2e.sh to run on Leasehold and on
# etcd 3.4 and compare: users, roles, grants, enable/disable, key permissions on get/put/del/txn,
# lease revoke needing write on attached keys, watch refusal, admin-only calls, password change.
E="timeout 20 etcdctl --endpoints=$1 --dial-timeout=2s --command-timeout=5s"
export ETCDCTL_API=3
$E user add root:rootpw; $E user add alice:apw; $E user add alice:x; $E role add r1; $E role add r1
$E role grant-permission r1 readwrite /a/ --prefix; $E role grant-permission r1 read /b
$E user grant-role alice r1; $E user grant-role alice nosuch; $E user revoke-role alice nosuch
$E auth enable; echo "rc=$?"
$E user grant-role root root; $E auth enable; echo "rc=$?"
$E put /a/x 1; echo "anonymous rc=$?"
$E --user alice:apw put /a/x 1; $E --user alice:apw get /a/ --prefix; $E --user alice:apw put /c 1
$E --user alice:apw get /b; $E --user alice:apw put /b 2; $E --user alice:apw get "" --from-key
$E --user alice:apw del /a/x --prev-kv
$E --user alice:apw txn <<T
value("/a/x") = "1"

put /a/y 2

T
$E --user alice:apw txn <<T
value("/c") = "1"

put /a/y 2

T
$E --user alice:wrong get /a/x; echo "wrong password rc=$?"
$E --user nobody:x get /a/x; echo "unknown user rc=$?"
$E --user root:rootpw user list; $E --user root:rootpw role list; $E --user root:rootpw role get r1
$E --user alice:apw user get alice; $E --user alice:apw user list; $E --user alice:apw role get r1
$E --user alice:apw user add mallory:m; $E --user alice:apw role add r2; $E --user alice:apw auth disable
$E --user root:rootpw user delete root; $E --user root:rootpw user revoke-role root root
$E --user root:rootpw role delete root
$E --user root:rootpw role revoke-permission r1 /zz; $E --user root:rootpw role revoke-permission r1 /b
$E --user alice:apw get /b
L=$($E --user alice:apw lease grant 100 | awk '{print $2}')
$E --user alice:apw put /a/l v --lease="$L"; $E --user root:rootpw put /zz v --lease="$L"
$E --user alice:apw lease revoke "$L"; $E --user root:rootpw lease revoke "$L" | sed -E "s/lease [0-9a-f]+ revoked/lease ID revoked/"
$E --user alice:apw watch /zz
$E --user alice:apw compaction 1; $E --user alice:apw defrag
$E --user root:rootpw user add bob:bpw; $E --user root:rootpw role add r2
$E --user root:rootpw user grant-role bob r2; $E --user root:rootpw role delete r2; $E --user root:rootpw user get bob
$E --user root:rootpw user passwd alice --interactive=false <<<"newpw"
$E --user alice:apw get /a/y; $E --user alice:newpw get /a/y; echo "rc=$?"
$E --user root:rootpw user delete bob; $E --user bob:bpw get /a/y
$E --user root:rootpw auth disable; $E get /a/y; $E auth disable
