#!/usr/bin/env bash
# Patroni (Debian's, with PostgreSQL 15) keeping a two-node PostgreSQL cluster's leader in a
# 3-member Leasehold cluster, and the same against etcd 3.4 as the baseline: a leader is elected and
# `patronictl list` shows it; when the leader's node dies (Patroni and PostgreSQL killed -9), and
# again when the DCS member the leader's Patroni talks to stops, the replica is promoted within
# Patroni's TTL plus its loop wait, and at no sample are two PostgreSQL servers primary at once.
# Skipped (77) where PostgreSQL cannot run: Patroni or PostgreSQL missing, or no unprivileged user
# to run it as.
source "$(dirname "$0")/lib.sh"
e2e_plan 10
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if ! command -v patroni >/dev/null || [ -z "$PG_BIN" ]; then
  echo "SKIP: Patroni or PostgreSQL is not installed"; exit 77
fi
RUN_AS=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || { echo "SKIP: running as root without a postgres user"; exit 77; }
  RUN_AS=(runuser -u postgres --)
  chmod 755 "$E2E_DIR"
fi
TTL=15; LOOP_WAIT=2; RETRY_TIMEOUT=5
BOUND=$((TTL + LOOP_WAIT + 8))  # seconds: TTL, a loop, and room for a loaded 2-core machine

declare -a DCS_PID PIDS_PATRONI
stop_all() {
  for p in "${PIDS_PATRONI[@]}" "${DCS_PID[@]}"; do kill -9 "$p" 2>/dev/null; done
  pkill -9 -f "$E2E_DIR/pg" 2>/dev/null
  wait 2>/dev/null
  PIDS_PATRONI=(); DCS_PID=()
}
trap 'stop_all; rm -rf "$E2E_DIR"' EXIT

start_dcs() { # binary name -> DCS_CP (client ports by member)
  local bin=$1 name=$2 initial="" i
  declare -ga DCS_CP=() DCS_PP=()
  for i in 1 2 3; do DCS_CP[$i]=$(free_port); DCS_PP[$i]=$(free_port); initial+="${initial:+,}$name$i=http://127.0.0.1:${DCS_PP[$i]}"; done
  for i in 1 2 3; do
    "$bin" --name "$name$i" --data-dir "$E2E_DIR/$name-dcs$i" \
      --listen-client-urls "http://127.0.0.1:${DCS_CP[$i]}" --advertise-client-urls "http://127.0.0.1:${DCS_CP[$i]}" \
      --listen-peer-urls "http://127.0.0.1:${DCS_PP[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${DCS_PP[$i]}" \
      --initial-cluster "$initial" --initial-cluster-token "$name-$$" >"$E2E_DIR/$name-dcs$i.log" 2>&1 &
    DCS_PID[$i]=$!
  done
  for _ in $(seq 1 150); do
    etcdctl --endpoints="127.0.0.1:${DCS_CP[1]}" endpoint health >/dev/null 2>&1 && return 0; sleep 0.1
  done
  fail "$name's DCS members start"
}

# Patroni node n (1 or 2), talking to DCS member n only (as each node runs beside its own member;
# without use_proxies Patroni would discover the other members and carry on through them).
start_patroni() { # n tag
  local n=$1 dir="$E2E_DIR/pg$2-$1"
  mkdir -p "$dir"
  PG_PORT[$n]=$(free_port); API_PORT[$n]=$(free_port)
  cat >"$dir/patroni.yml" <<YAML
scope: e2e-$2
name: node$n
restapi:
  listen: 127.0.0.1:${API_PORT[$n]}
  connect_address: 127.0.0.1:${API_PORT[$n]}
etcd3:
  hosts: 127.0.0.1:${DCS_CP[$n]}
  use_proxies: true  # this member only: no failing over to the others Patroni would discover
bootstrap:
  dcs:
    ttl: $TTL
    loop_wait: $LOOP_WAIT
    retry_timeout: $RETRY_TIMEOUT
  initdb:
  - encoding: UTF8
postgresql:
  listen: 127.0.0.1:${PG_PORT[$n]}
  connect_address: 127.0.0.1:${PG_PORT[$n]}
  data_dir: $dir/data
  bin_dir: $PG_BIN
  pgpass: $dir/pgpass
  authentication:
    superuser: {username: postgres, password: e2e}
    replication: {username: replicator, password: e2e}
  pg_hba:
  - host replication replicator 127.0.0.1/32 trust
  - host all all 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: $dir
YAML
  [ "${#RUN_AS[@]}" -gt 0 ] && chown -R postgres "$dir"
  "${RUN_AS[@]}" patroni "$dir/patroni.yml" >"$dir/patroni.log" 2>&1 &
  PIDS_PATRONI[$n]=$!
  PATRONI_CONF[$n]="$dir/patroni.yml"
}

# Which node's PostgreSQL says it is primary now ("1", "2", "1 2" or "").
primaries() {
  local out="" n
  for n in 1 2; do
    [ "$(PGCONNECT_TIMEOUT=1 "$PG_BIN/psql" -h 127.0.0.1 -p "${PG_PORT[$n]}" -U postgres -d postgres -tAc 'select pg_is_in_recovery()' 2>/dev/null)" = f ] && out+="${out:+ }$n"
  done
  echo "$out"
}

# Waits until node `want` is the only primary, sampling twice a second; sets WAITED (seconds) and
# DUAL (how many samples saw two primaries). Gives up after `limit` seconds.
wait_primary() { # want limit
  local start now p
  start=$(date +%s.%N); DUAL=0; WAITED=""
  while :; do
    p=$(primaries)
    [ "$p" = "1 2" ] && DUAL=$((DUAL + 1))
    now=$(date +%s.%N)
    if [ "$p" = "$1" ]; then WAITED=$(echo "$now - $start" | bc); return 0; fi
    [ "$(echo "$now - $start > $2" | bc)" = 1 ] && return 1
    sleep 0.5
  done
}

declare -a PG_PORT API_PORT PATRONI_CONF
scenario() { # server binary how(kill|dcs) -> checks
  local server=$1 bin=$2 how=$3 tag="$1-$3" leader other list
  start_dcs "$bin" "$tag"
  start_patroni 1 "$tag"; sleep 3; start_patroni 2 "$tag"
  leader=""
  for _ in $(seq 1 120); do
    list=$(patronictl -c "${PATRONI_CONF[1]}" list 2>/dev/null)
    if grep -q "Leader.*running" <<<"$list" && [ "$(grep -c "running" <<<"$list")" = 2 ]; then
      leader=$(grep "Leader" <<<"$list" | grep -o "node[12]" | tr -d node); break
    fi
    sleep 0.5
  done
  other=$((3 - ${leader:-1}))
  if [ "$how" = kill ]; then
    check "$server: a leader is elected and patronictl lists it with its replica" "1 $(primaries)" \
      "$([ -n "$leader" ] && echo 1) $leader"
    kill -9 "${PIDS_PATRONI[$leader]}" 2>/dev/null; pkill -9 -f "$E2E_DIR/pg$tag-$leader/" 2>/dev/null
  else
    # The DCS member the leader's Patroni talks to stops: that Patroni can no longer renew its key
    # and demotes itself; the other takes over once the key has expired.
    kill "${DCS_PID[$leader]}" 2>/dev/null
  fi
  if wait_primary "$other" "$BOUND"; then
    check "$server ($how): the replica is promoted within TTL + loop wait ($WAITED s)" yes yes
  else
    check "$server ($how): the replica is promoted within TTL + loop wait" "primary: $other" "primary: $(primaries)"
  fi
  check "$server ($how): never two primaries at once" 0 "$DUAL"
  echo "$server $how failover: ${WAITED:-none} s" >>"$E2E_DIR/times"
  stop_all
}

scenario leasehold "$LEASEHOLD_BIN" kill
scenario leasehold "$LEASEHOLD_BIN" dcs
scenario etcd etcd kill
scenario etcd etcd dcs
cat "$E2E_DIR/times"
e2e_finish
