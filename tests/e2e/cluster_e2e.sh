#!/usr/bin/env bash
# A 3-member cluster of real leasehold processes driven by Debian's etcdctl: every member serves
# every command; kill -9 of the leader under writes and keep-alives loses no acknowledged write,
# keeps the kept-alive lease, revokes the abandoned one on time, honours a renewal acknowledged just
# before the kill; the killed member catches up; a full restart keeps the state; a member cut off
# from the quorum refuses writes with etcd's errors; members are added and removed under load; a
# member moves to another peer address.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cluster_lib.sh"
e2e_plan 92
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }

cluster_launch 3
# A write sent before the founding members have elected a leader waits for one, as on etcd,
# rather than failing with "no leader".
for _ in $(seq 1 500); do (echo >"/dev/tcp/127.0.0.1/${CPORT[1]}") 2>/dev/null && break; sleep 0.01; done
run_ctl_at() { OUT=$(ctl_at "$@" 2>"$E2E_DIR/err"); RC=$?; ERR=$(grep -v '"level":"warn"' "$E2E_DIR/err"); }
run_ctl_at 1 put early 1
check "a put sent before the first election succeeds once it is over" "OK" "${OUT:-$ERR}"
cluster_await
L=$(leader_index); F=$(( L % 3 + 1 )); G=$(( F % 3 + 1 ))   # leader, and two followers
# etcd's initial election tick advance: members that start together and see both peers let most of
# an election timeout pass at once.
ADVANCED='"msg":"initialized peer connections; fast-forwarding election ticks","local-member-id":"[0-9a-f]+","forward-ticks":"8","forward-duration":"800ms","election-ticks":"10","election-timeout":"1s","active-remote-members":"2"'
check "the founding members advance their election ticks once connected" 1 \
  "$(grep -lE "$ADVANCED" "$E2E_DIR"/m[123].log | wc -l | awk '{print ($1 >= 1)}')"

# Each member's first linearizable read, all at once: the leader tells pending reads apart by a
# context that must be unique in the cluster (it once was only per member, and two members' first
# reads collided: one went unanswered until asked again). None needs asking again.
READERS=()
for i in 1 2 3; do ctl_at "$i" get early --print-value-only >"$E2E_DIR/first-read-$i" 2>&1 & READERS+=($!); done
wait "${READERS[@]}"
for i in 1 2 3; do check "member $i's first linearizable read, at the same time as the others'" 1 "$(cat "$E2E_DIR/first-read-$i")"; done
SLOW=0
for i in 1 2 3; do
  n=$(curl -s "http://127.0.0.1:${MPORT[$i]}/metrics" | awk '/^etcd_server_slow_read_indexes_total/ { print $2 }')
  SLOW=$(echo "$SLOW + ${n:-1}" | bc)
done
check "and none was asked again (etcd_server_slow_read_indexes_total)" 0 "$SLOW"

# Membership and status, from any member (client URLs appear once each member has published them).
STARTED=', started, m[123], http://127.0.0.1:[0-9]*, http://127.0.0.1:[0-9]*, false$'
for _ in $(seq 1 50); do
  OUT=$(ctl_at "$F" member list 2>/dev/null); [ "$(grep -c "$STARTED" <<<"$OUT")" = 3 ] && break; sleep 0.1
done
check "member list: three started members" 3 "$(grep -c "$STARTED" <<<"$OUT")"
OUT=$(timeout 20 etcdctl --endpoints="$(ep "$F")" endpoint status --cluster 2>/dev/null)
check "endpoint status --cluster: three endpoints" 3 "$(wc -l <<<"$OUT")"
check "endpoint status --cluster: one leader" 1 "$(grep -c ', true, false, ' <<<"$OUT")"
check "/health on every member" '{"health":"true"} {"health":"true"} {"health":"true"}' \
  "$(for i in 1 2 3; do curl -s -m 10 "http://127.0.0.1:${MPORT[$i]}/health"; echo; done | tr '\n' ' ' | sed 's/ $//')"
check "/metrics: exactly one member leads" 1 \
  "$(for i in 1 2 3; do curl -s -m 5 "http://127.0.0.1:${MPORT[$i]}/metrics"; done | grep -c '^etcd_server_is_leader 1$')"

# Writes through every member, linearizable reads from every member.
for i in 1 2 3; do ctl_at "$i" put "k/$i" "v$i" >/dev/null; done
for i in 1 2 3; do
  check "member $i reads every write" "k/1 v1 k/2 v2 k/3 v3" "$(ctl_at "$i" get k/ --prefix | tr '\n' ' ' | sed 's/ $//')"
done

# Leases through followers: grant, attach, time-to-live and keep-alive are forwarded as needed.
ID=$(ctl_at "$F" lease grant 30 | awk '{print $2}')
ctl_at "$G" put svc/x 1 --lease="$ID" >/dev/null
check_match "timetolive through a follower" "^lease $ID granted with TTL\(30s\), remaining\((29|30)s\), attached keys\(\[svc/x\]\)$" \
  "$(ctl_at "$G" lease timetolive "$ID" --keys)"
check "keep-alive --once through a follower" "lease $ID keepalived with TTL(30)" "$(ctl_at "$F" lease keep-alive --once "$ID")"
check "lease list on every member" "$ID $ID $ID" "$(for i in 1 2 3; do ctl_at "$i" lease list | tail -n +2; done | tr '\n' ' ' | sed 's/ $//')"

# Failover: kill -9 the leader while a writer runs and one lease is kept alive through a follower.
KEPT=$(ctl_at "$F" lease grant 6 | awk '{print $2}')
ctl_at "$F" put fo/kept 1 --lease="$KEPT" >/dev/null
timeout 40 etcdctl --endpoints="$(ep "$F")" lease keep-alive "$KEPT" >"$E2E_DIR/keepalive.out" 2>&1 &
KA_PID=$!
ABANDONED=$(ctl_at "$G" lease grant 6 | awk '{print $2}'); T_ABANDONED=$(now)
ctl_at "$G" put fo/abandoned 1 --lease="$ABANDONED" >/dev/null
: >"$E2E_DIR/acked"
( for n in $(seq 1 400); do
    timeout 10 etcdctl --endpoints="$(all_eps)" --dial-timeout=1s --command-timeout=8s put "w/$(printf %04d "$n")" "$n" \
      >/dev/null 2>&1 && echo "w/$(printf %04d "$n")" >>"$E2E_DIR/acked"
  done ) &
WRITER=$!
sleep 1
T_KILL=$(now); member_stop "$L" KILL
# A keep-alive sent while there is no leader waits for the new one (as etcd's does), rather than
# going unanswered: etcdctl sends it once and waits up to its command timeout (10 s here, as an
# election on a loaded CI host has taken 3.5 s).
timeout 20 etcdctl --endpoints="$(ep "$F")" --dial-timeout=2s --command-timeout=10s lease keep-alive --once "$KEPT" \
  >"$E2E_DIR/ka-once.out" 2>&1 &
KA_ONCE=$!
NEW=""; for _ in $(seq 1 100); do NEW=$(leader_index); [ -n "$NEW" ] && break; done
check_match "a new leader is elected" "^[123]$" "$NEW"
until ctl_at "$F" put fo/after-kill 1 >/dev/null 2>&1; do sleep 0.1; done
WRITABLE_AFTER=$(since "$T_KILL")
check "writes resume within 4 s of the kill" 1 "$(echo "$WRITABLE_AFTER < 4" | bc)"
until [ -z "$(ctl_at "$F" get fo/abandoned --consistency=s --keys-only)" ]; do
  sleep 0.1; [ "$(echo "$(since "$T_ABANDONED") > 20" | bc)" = 1 ] && break
done
GONE=$(since "$T_ABANDONED")
# TTL 6 s; bound: TTL + election timeout (1 s) + the new leader's allowance (0.5 s) + 1 s of slack.
check "abandoned lease revoked on time (${GONE}s after grant)" 1 "$(echo "$GONE >= 6 && $GONE <= 8.5" | bc)"
wait "$KA_ONCE"
check "keep-alive --once sent during the election is answered" "lease $KEPT keepalived with TTL(6)" \
  "$(cat "$E2E_DIR/ka-once.out")"
sleep "$(echo "15 - $(since "$T_ABANDONED")" | bc)"
check "kept-alive lease survives the failover" "fo/kept" "$(ctl_at "$F" get fo/kept --keys-only | head -1)"
kill "$KA_PID" 2>/dev/null; wait "$KA_PID" 2>/dev/null
wait "$WRITER"
MISSING=0
while read -r key; do [ -n "$(ctl_at "$F" get "$key" --keys-only)" ] || MISSING=$((MISSING + 1)); done <"$E2E_DIR/acked"
check "no acknowledged write lost ($(wc -l <"$E2E_DIR/acked") acknowledged)" 0 "$MISSING"

# The killed member restarts and catches up.
member_start "$L"
LAST=$(tail -1 "$E2E_DIR/acked")
for _ in $(seq 1 100); do [ -n "$(ctl_at "$L" get "$LAST" --consistency=s --keys-only 2>/dev/null)" ] && break; sleep 0.1; done
check "restarted member caught up" "$LAST" "$(ctl_at "$L" get "$LAST" --consistency=s --keys-only | head -1)"

# A renewal acknowledged just before the leader dies is honoured by the next leader: a lease of
# 10 s renewed once at 5 s must live until 15 s, even though no periodic checkpoint ran between
# the renewal and the kill.
L=$(leader_index); F=$(( L % 3 + 1 ))
LONG=$(ctl_at "$F" lease grant 10 | awk '{print $2}'); T_LONG=$(now)
ctl_at "$F" put fo/renewed 1 --lease="$LONG" >/dev/null
sleep "$(echo "5 - $(since "$T_LONG")" | bc)"
ctl_at "$F" lease keep-alive --once "$LONG" >/dev/null; T_RENEWED=$(now)
member_stop "$L" KILL
sleep "$(echo "9.6 - $(since "$T_RENEWED")" | bc)"
check "renewal acknowledged before the kill is honoured" "fo/renewed" "$(ctl_at "$F" get fo/renewed --keys-only --consistency=s | head -1)"
until [ -z "$(ctl_at "$F" get fo/renewed --consistency=s --keys-only)" ]; do
  sleep 0.1; [ "$(echo "$(since "$T_RENEWED") > 20" | bc)" = 1 ] && break
done
GONE=$(since "$T_RENEWED")
check "renewed lease revoked on time (${GONE}s after the renewal)" 1 "$(echo "$GONE >= 10 && $GONE <= 12.5" | bc)"
member_start "$L"
for _ in $(seq 1 100); do [ -n "$(ctl_at "$L" get fo/after-kill --consistency=s --keys-only 2>/dev/null)" ] && break; sleep 0.1; done

# A full restart keeps the state, identical on every member.
dump() { ctl_at "$1" get "" --prefix -w json --consistency=s | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("kvs",[]), sort_keys=True))' | md5sum; }
BEFORE=$(dump "$F")
for i in 1 2 3; do member_stop "$i" TERM; done
for i in 1 2 3; do member_start "$i"; done
check_match "leader after full restart" "^[123]$" "$(leader_index)"
for i in 1 2 3; do
  for _ in $(seq 1 50); do [ "$(dump "$i" 2>/dev/null)" = "$BEFORE" ] && break; sleep 0.1; done
  check "member $i state identical after full restart" "$BEFORE" "$(dump "$i")"
done
# etcd's consistency check: every member hashes the versions kept up to a revision alike.
REV=$(ctl_at "$F" endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])')
HASHES=$(for i in 1 2 3; do ctl_at "$i" endpoint hashkv --rev "$REV" -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["HashKV"]["hash"])'; done | sort -u)
check "endpoint hashkv at revision $REV: one hash on all three members" 1 "$(grep -c . <<<"$HASHES")"
# etcd's --experimental-initial-corrupt-check: a member restarted with it compares its hash with
# both peers' (on their peer URLs) before it serves.
member_stop "$F" TERM
member_start "$F" --experimental-initial-corrupt-check --initial-election-tick-advance=false
PASSED_LINE='"msg":"initial corruption checking passed; no corruption"'
for _ in $(seq 1 100); do grep -q "$PASSED_LINE" "$E2E_DIR/m$F.log" && break; sleep 0.1; done
check "initial corruption check: passed, the data the same as the peers'" 1 "$(grep -c "$PASSED_LINE" "$E2E_DIR/m$F.log")"
check "initial corruption check: both peers answered" 0 "$(grep -c '"msg":"cannot fetch hash from remote peer"' "$E2E_DIR/m$F.log")"
check "--initial-election-tick-advance=false: the restarted member says it skips the advance" 1 \
  "$(grep -c '"msg":"skipping initial election tick advance","election-ticks":"10"' "$E2E_DIR/m$F.log")"

# Maintenance: move-leader hands leadership to a follower (etcdctl finds the leader among the
# endpoints it is given); an unknown target is refused; defrag compacts every member.
member_hex() { ctl_at "$1" endpoint status -w json | python3 -c 'import json,sys; print("%x" % json.load(sys.stdin)[0]["Status"]["header"]["member_id"])'; }
L=$(leader_index); T=$(( L % 3 + 1 ))
LID=$(member_hex "$L"); TID=$(member_hex "$T")
OUT=$(timeout 20 etcdctl --endpoints="$(all_eps)" move-leader "$TID" 2>&1)
check "move-leader transfers leadership" "Leadership transferred from $LID to $TID" "$OUT"
check "the target leads after move-leader" "$T" "$(leader_index)"
OUT=$(timeout 20 etcdctl --endpoints="$(all_eps)" move-leader 1234abcd 2>&1 | grep -v '"level":"warn"')
check "move-leader to an unknown member is refused" "Error: etcdserver: bad leader transferee" "$OUT"
OUT=$(timeout 60 etcdctl --endpoints="$(all_eps)" defrag 2>&1)
check "defrag on every member" 3 "$(grep -c '^Finished defragmenting etcd member\[127.0.0.1:[0-9]*\]$' <<<"$OUT")"
check "writes after defrag" "OK" "$(ctl_at "$T" put after/defrag 1)"

# One member down: membership changes that would leave the quorum on the live members alone are
# refused ("unhealthy cluster", etcd's connectivity check), decided by the leader though asked of a
# follower.
L=$(leader_index); F=$(( L % 3 + 1 )); G=$(( F % 3 + 1 ))
FID=$(member_hex "$F")
member_stop "$G" TERM
sleep 1.5  # past an election timeout: the leader no longer counts G as active
run_ctl_at "$F" member remove "$FID"
check "one member down: removing a live one is refused" "Error: etcdserver: unhealthy cluster" "$ERR"
run_ctl_at "$F" member add m5 --peer-urls="http://127.0.0.1:$(free_port)"
check "one member down: adding a voter is refused" "Error: etcdserver: unhealthy cluster" "$ERR"
check "three members still" 3 "$(ctl_at "$L" member list | wc -l)"

# Quorum lost: the lone member refuses writes and linearizable reads, serves serializable ones.
failed_proposals() { curl -s -m 5 "http://127.0.0.1:${MPORT[$L]}/metrics" | awk '$1 == "etcd_server_proposals_failed_total" { print $2 }'; }
FAILED_BEFORE=$(failed_proposals)
member_stop "$F" TERM
sleep 3
run_ctl_at "$L" get k/1
check "no quorum: linearizable get fails" 1 "$RC"
check "no quorum: serializable get served" "k/1 v1" "$(ctl_at "$L" get k/1 --consistency=s | tr '\n' ' ' | sed 's/ $//')"
check "no quorum: /health says so" '503 {"health":"false"}' "$(curl -s -m 20 -w '%{http_code} ' -o "$E2E_DIR/health" "http://127.0.0.1:${MPORT[$L]}/health"; cat "$E2E_DIR/health")"
check "no quorum: /metrics has no leader" "etcd_server_has_leader 0" "$(curl -s -m 5 "http://127.0.0.1:${MPORT[$L]}/metrics" | grep '^etcd_server_has_leader ')"
run_ctl_at "$L" --command-timeout=2s put lonely 1
check "no quorum: put fails" 1 "$RC"
# As on etcd, the write waits for a leader that does not come, until etcdctl's timeout.
check_match "no quorum: put error" "^Error: (context deadline exceeded|etcdserver: no leader)$" "$ERR"
# The members come back well within the server's request timeout (7 s), while the write would still
# be waiting for a leader had its client not given up.
member_start "$F"; member_start "$G"
until ctl_at "$L" put healed 1 >/dev/null 2>&1; do sleep 0.2; done
check "healed: every member reads the write" "healed healed healed" \
  "$(for i in 1 2 3; do ctl_at "$i" get healed --keys-only | head -1; done | tr '\n' ' ' | sed 's/ $//')"
check "healed: the write whose client gave up while there was no leader was dropped, as on etcd" "" \
  "$(ctl_at "$L" get lonely --print-value-only)"
# etcd's metrics for what just happened, as its alerting rules read them.
METRICS=$(curl -s -m 5 "http://127.0.0.1:${MPORT[$L]}/metrics")
metric() { awk -v name="$1" '$1 == name { print $2 }' <<<"$METRICS"; }
check "metrics: messages to the stopped member counted as failed sends" 1 \
  "$(awk -v n="etcd_network_peer_sent_failures_total{To=\"$(member_hex "$F")\"}" '$1 == n { print ($2 > 0) }' <<<"$METRICS")"
check "metrics: the given-up write counted as a failed proposal" 1 \
  "$(awk -v before="${FAILED_BEFORE:-0}" -v now="$(metric etcd_server_proposals_failed_total)" 'BEGIN { print (now > before) }')"
# (A lease checkpoint may be on its way when scraped: it is answered within moments.)
for _ in $(seq 1 50); do
  [ "$(curl -s -m 5 "http://127.0.0.1:${MPORT[$L]}/metrics" | awk '$1 == "etcd_server_proposals_pending" { print $2 }')" = 0 ] && break
  sleep 0.1
done
check "metrics: nothing pending once healed" 0 "$(curl -s -m 5 "http://127.0.0.1:${MPORT[$L]}/metrics" | awk '$1 == "etcd_server_proposals_pending" { print $2 }')"
check "metrics: backend commits timed" 1 "$(metric etcd_disk_backend_commit_duration_seconds_count | awk '{ print ($1 > 0) }')"
check "metrics: the quota" 2147483648 "$(metric etcd_server_quota_backend_bytes)"
check "metrics: data in use, no more than the size on disk and log" 1 \
  "$(awk -v used="$(metric etcd_mvcc_db_total_size_in_use_in_bytes)" -v total="$(metric etcd_mvcc_db_total_size_in_bytes)" 'BEGIN { print (used > 0 && used <= total) }')"

# Membership changes under load: add a fourth member, which joins and catches up; remove it again.
( for n in $(seq 1 200); do ctl_at "$L" put "load/$n" "$n" >/dev/null 2>&1; done ) &
LOAD=$!
CLUSTER_N=4; CPORT[4]=$(free_port); PPORT[4]=$(free_port)
OUT=$(ctl_at "$L" member add m4 --peer-urls="http://127.0.0.1:${PPORT[4]}")
# etcdctl pads ids to 16 characters with spaces.
check_match "member add" "^Member +[0-9a-f]+ added to cluster +[0-9a-f]+" "$OUT"
check_match "member add prints the join settings" 'ETCD_INITIAL_CLUSTER_STATE="existing"' "$OUT"
NEW_ID=$(awk '/^Member/ {print $2}' <<<"$OUT")
member_start 4 --initial-cluster-state existing
wait "$LOAD"
ctl_at "$L" put after-join 1 >/dev/null
for _ in $(seq 1 100); do [ -n "$(ctl_at 4 get after-join --consistency=s --keys-only 2>/dev/null)" ] && break; sleep 0.1; done
check "new member caught up" "after-join" "$(ctl_at 4 get after-join --consistency=s --keys-only | head -1)"
check "new member has every write" "200" "$(ctl_at 4 get load/ --prefix --keys-only --consistency=s | grep -c '^load/')"
check_match "member list shows it started" "^$NEW_ID, started, m4, " "$(ctl_at "$L" member list | grep "^$NEW_ID")"
run_ctl_at "$L" member remove "$NEW_ID"
check "member remove" "Member $NEW_ID removed from cluster" "$(awk '{print $1, $2, $3, $4, $5}' <<<"$OUT")"
for _ in $(seq 1 50); do kill -0 "${CPID[4]}" 2>/dev/null || break; sleep 0.1; done
check "removed member shuts down" 1 "$(kill -0 "${CPID[4]}" 2>/dev/null && echo 0 || echo 1)"
CPID[4]=""
check "three members left" 3 "$(ctl_at "$L" member list | wc -l)"
run_ctl_at "$L" member remove "$NEW_ID"
check "removing an unknown member" "Error: etcdserver: member not found" "$ERR"
run_ctl_at "$L" member add m5 --peer-urls="http://127.0.0.1:${PPORT[1]}"
check "adding a member with taken peer URLs" "Error: etcdserver: Peer URLs already exists" "$ERR"

# A learner's promotion is the leader's to decide, wherever it is asked: a follower forwards it, as
# etcd's do, so a learner that has not caught up is refused through any member.
L=$(leader_index); F=$(( L % 3 + 1 ))
rm -rf "$E2E_DIR/m4"; CPORT[4]=$(free_port); PPORT[4]=$(free_port)
OUT=$(ctl_at "$L" member add m4 --learner --peer-urls="http://127.0.0.1:${PPORT[4]}")
check_match "learner add" "^Member +[0-9a-f]+ added to cluster +[0-9a-f]+" "$OUT"
LEARNER_ID=$(awk '/^Member/ {print $2}' <<<"$OUT")
run_ctl_at "$F" member promote "$LEARNER_ID"
check "promote through a follower: a learner not started" \
  "Error: etcdserver: can only promote a learner member which is in sync with leader" "$ERR"
run_ctl_at "$F" member promote 1234
check "promote through a follower: an unknown member" "Error: etcdserver: member not found" "$ERR"
run_ctl_at "$F" member promote "$(member_hex "$L")"
check "promote through a follower: a voter" "Error: etcdserver: can only promote a learner member" "$ERR"
member_start 4 --initial-cluster-state existing
for _ in $(seq 1 100); do
  ctl_at "$L" member list | grep -q "^$LEARNER_ID, started, m4, .*, true$" && break; sleep 0.1
done
# etcdctl's IS LEARNER column comes from the member's own Status.
learner_flag() { ctl_at 4 endpoint status -w json | grep -o '"isLearner":true'; }
for _ in $(seq 1 50); do [ -n "$(learner_flag)" ] && break; sleep 0.1; done
check "the learner's endpoint status says it is one" '"isLearner":true' "$(learner_flag)"
# Like etcd 3.4's, a learner answers serializable reads and Status only.
run_ctl_at 4 put on-learner 1
check "a learner refuses a put" "Error: etcdserver: rpc not supported for learner" "$ERR"
run_ctl_at 4 get lag
check "a learner refuses a linearizable read" "Error: etcdserver: rpc not supported for learner" "$ERR"
run_ctl_at 4 member list
check "a learner refuses member list" "Error: etcdserver: rpc not supported for learner" "$ERR"
run_ctl_at 4 lease grant 10
check "a learner refuses a lease grant" "Error: failed to grant lease (etcdserver: rpc not supported for learner)" "$ERR"
run_ctl_at 4 role revoke-permission any-role any-key
check "a learner refuses an auth change" "Error: etcdserver: rpc not supported for learner" "$ERR"
run_ctl_at 4 elect -l any
check "a learner refuses an election stream" "Error: etcdserver: rpc not supported for learner" "$ERR"
for _ in $(seq 1 50); do [ "$(ctl_at 4 get early --consistency=s --print-value-only)" = 1 ] && break; sleep 0.1; done
check "a learner serves a serializable read" 1 "$(ctl_at 4 get early --consistency=s --print-value-only)"
check "the JSON gateway on a learner refuses too" 14 \
  "$(curl -s -X POST "http://$(ep 4)/v3/kv/put" -d '{"key":"eA==","value":"eA=="}' |
     python3 -c 'import json,sys; print(json.load(sys.stdin).get("code"))')"
# Paused, the learner falls more than 10% behind the leader's log (etcd's measure): the member table
# still says it started, so only the leader can tell.
kill -STOP "${CPID[4]}"
RAFT_INDEX=$(ctl_at "$L" endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["raftIndex"])')
python3 - "$(ep "$L")" $((RAFT_INDEX / 8 + 20)) <<'PY'
import http.client, sys
conn = http.client.HTTPConnection(sys.argv[1])
for _ in range(int(sys.argv[2])):
    conn.request("POST", "/v3/kv/put", body='{"key":"bGFn","value":"eA=="}')
    assert conn.getresponse().read().startswith(b'{"header"')
PY
run_ctl_at "$F" member promote "$LEARNER_ID"
check "promote through a follower: a learner behind the leader" \
  "Error: etcdserver: can only promote a learner member which is in sync with leader" "$ERR"
kill -CONT "${CPID[4]}"
for _ in $(seq 1 50); do run_ctl_at "$F" member promote "$LEARNER_ID"; [ "$RC" = 0 ] && break; sleep 0.2; done
check_match "promote through a follower, once caught up" "^Member +$LEARNER_ID promoted in cluster +[0-9a-f]+$" "$OUT"
# Asked through the follower, the follower's own list shows the change at once, as etcd's does.
check_match "the promoted member is a voter" "^$LEARNER_ID, started, m4, .*, false$" \
  "$(ctl_at "$F" member list | grep "^$LEARNER_ID")"
for _ in $(seq 1 50); do [ -z "$(learner_flag)" ] && break; sleep 0.1; done
check "the promoted member's endpoint status no longer says learner" "" "$(learner_flag)"
run_ctl_at 4 put on-promoted 1
check "the promoted member takes a put" "OK" "$OUT"
run_ctl_at "$L" member remove "$LEARNER_ID"
check_match "the promoted member is removed" "^Member +$LEARNER_ID removed" "$OUT"
for _ in $(seq 1 50); do kill -0 "${CPID[4]}" 2>/dev/null || break; sleep 0.1; done
CPID[4]=""

# A member moves to another peer address (etcd's member update, then a restart there): the others
# reach it at the new address only, since nothing listens at the old one any more.
L=$(leader_index); M=$(( L % 3 + 1 ))
MID=$(member_hex "$M"); OLD_PEER=${PPORT[$M]}; NEW_PEER=$(free_port)
run_ctl_at "$L" member update "$MID" --peer-urls="http://127.0.0.1:$NEW_PEER"
check_match "member update" "^Member +$MID updated in cluster +[0-9a-f]+$" "$OUT"
check_match "member list shows the new peer URL" "^$MID, started, m$M, http://127.0.0.1:$NEW_PEER, " \
  "$(ctl_at "$L" member list | grep "^$MID")"
member_stop "$M" TERM
PPORT[$M]=$NEW_PEER
member_start "$M"
ctl_at "$L" put after-move 1 >/dev/null
for _ in $(seq 1 100); do [ -n "$(ctl_at "$M" get after-move --consistency=s --keys-only 2>/dev/null)" ] && break; sleep 0.1; done
check "moved member gets new writes at its new address" "after-move" \
  "$(ctl_at "$M" get after-move --consistency=s --keys-only | head -1)"
run_ctl_at "$L" member update "$MID" --peer-urls="http://127.0.0.1:${PPORT[$L]}"
check "member update to another member's peer URL" "Error: etcdserver: Peer URLs already exists" "$ERR"
run_ctl_at "$L" member update 1234 --peer-urls="http://127.0.0.1:$OLD_PEER"
check "member update of an unknown member" "Error: etcdserver: member not found" "$ERR"

# A voter that is down may always be removed, even through a follower: it is not part of the
# working quorum (etcd's escape from its connectivity check).
L=$(leader_index); F=$(( L % 3 + 1 )); G=$(( F % 3 + 1 ))
GID=$(member_hex "$G")
member_stop "$G" TERM
sleep 1.5
run_ctl_at "$F" member remove "$GID"
check_match "a member down is removed" "^Member +$GID removed" "$OUT"
check "two members left, and they take writes" "2 OK" "$(ctl_at "$L" member list | wc -l) $(ctl_at "$F" put after-removal 1)"

cluster_stop_all
if [ "$E2E_FAILED" -gt 0 ]; then for f in "$E2E_DIR"/m*.log; do echo "== $f"; grep -v '"level":"info"' "$f" | tail -n 5; done; fi
e2e_finish
