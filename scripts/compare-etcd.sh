#!/usr/bin/env bash
# Side-by-side benchmark of Leasehold and Debian's etcd 3.4 on this machine, in one run: both single
# node (or both 3-member clusters on loopback with --nodes 3, load sent to the leader), fsync on,
# data on the same disk, own ports and data dirs. Every workload runs against each server in turn
# (alternating which goes first) REPEATS times; the table reports medians and ratios, and is
# written to docs/benchmarks.md (docs/benchmarks-3-nodes.md for --nodes 3) with the exact command.
# A million leases are restarted single node only. --only PATTERN runs just the cases whose names
# match (grep -E) and writes its table to build/compare-table.md instead of docs/.
# With --client go the load comes from etcd's own Go client instead (client/go-bench, built by
# scripts/go-build.sh from Debian's Go packages): the lock hand-over and watch fan-out cases only,
# written to the last section of docs/benchmarks.md (each kind of run keeps the other's part).
#
# usage: scripts/compare-etcd.sh [--nodes 1|3] [--client cpp|go] [--duration S] [--repeats N]
#                                [--rss-leases "100000 1000000"] [--storm-leases "100000 1000000"]
#                                [--storm-drain-timeout S] [--backlog-leases N] [--backlog-ttl S]
#                                [--only PATTERN] [--out FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/bench-lib.sh
DURATION=10
REPEATS=3
RSS_LEASES="100000 1000000"
STORM_LEASES="100000 1000000"
# etcd revokes 1000 leases a second: a million would take it over a quarter of an hour. Past this
# many seconds after the last deadline a storm case ends with the share deleted by then.
STORM_DRAIN_TIMEOUT=120
# The expiry backlog after a restart: leases of BACKLOG_TTL s (longer than granting them takes, so
# that all are alive when the members stop) fall due while the members are down.
BACKLOG_LEASES=100000
BACKLOG_TTL=120
ONLY=""
NODES=1
CLIENT=cpp
OUT=""
COMMAND="scripts/compare-etcd.sh $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --client) CLIENT=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --rss-leases) RSS_LEASES=$2; shift 2 ;;
    --storm-leases) STORM_LEASES=$2; shift 2 ;;
    --storm-drain-timeout) STORM_DRAIN_TIMEOUT=$2; shift 2 ;;
    --backlog-leases) BACKLOG_LEASES=$2; shift 2 ;;
    --backlog-ttl) BACKLOG_TTL=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "unknown argument $1"; exit 2 ;;
  esac
done
[ "$NODES" = 1 ] || [ "$NODES" = 3 ] || { echo "--nodes must be 1 or 3"; exit 2; }
[ "$CLIENT" = cpp ] || [ "$CLIENT" = go ] || { echo "--client must be cpp or go"; exit 2; }
if [ -z "$OUT" ]; then
  if [ -n "$ONLY" ]; then OUT=build/compare-table.md
  elif [ "$NODES" = 1 ]; then OUT=docs/benchmarks.md
  else OUT=docs/benchmarks-3-nodes.md; fi
fi

if [ "$CLIENT" = go ]; then scripts/install-deps.sh golang-go golang-etcd-server-dev; else scripts/install-deps.sh; fi
scripts/build.sh --target leasehold leasehold-bench
BENCH="$ROOT/build/client/leasehold-bench"
WORK="$ROOT/build/compare"
rm -rf "$WORK" && mkdir -p "$WORK"
if [ "$CLIENT" = go ]; then
  scripts/go-build.sh client/go-bench build/go/leasehold-go-bench
  BENCH="$ROOT/build/go/leasehold-go-bench"
fi
RESULTS="$WORK/results.jsonl"
: > "$RESULTS"
ETCD_PORT=22479
LH_PORT=22579
PIDS=()
PID=""  # the member that takes the load (the leader)
FOLLOWER=""  # another member's client endpoint (3 nodes)

# Member i (1..NODES) of server $1: client port, peer port.
client_port() { echo $(( $([ "$1" = etcd ] && echo "$ETCD_PORT" || echo "$LH_PORT") + 10 * ($2 - 1) )); }
peer_port() { echo $(( $(client_port "$1" "$2") + 1 )); }

start_server() { # etcd|leasehold [keep]: with keep, on the data the last run left
  local initial="" i
  for i in $(seq 1 "$NODES"); do initial+="${initial:+,}m$i=http://127.0.0.1:$(peer_port "$1" "$i")"; done
  PIDS=()
  for i in $(seq 1 "$NODES"); do
    local dir="$WORK/data-$1-$i" cp pp
    cp=$(client_port "$1" "$i"); pp=$(peer_port "$1" "$i")
    [ "${2:-}" = keep ] || rm -rf "$dir"
    launch_member "$1" "m$i" "$dir" "$cp" "$pp" "$initial" "$WORK/$1-$i.log"
    PIDS+=($!)
  done
  # Wait for a leader and send the load to it (FOLLOWER: another member, for the cases that go
  # through one).
  for _ in $(seq 1 200); do
    for i in $(seq 1 "$NODES"); do
      ENDPOINT="127.0.0.1:$(client_port "$1" "$i")"
      if is_leader "$ENDPOINT"; then
        PID=${PIDS[$((i - 1))]}
        FOLLOWER="127.0.0.1:$(client_port "$1" $((i % NODES + 1)))"
        return 0
      fi
    done
    sleep 0.1
  done
  echo "$1 did not start"; exit 1
}
stop_server() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=(); PID=""
}
trap stop_server EXIT

# CPU of every member of the server under test, in clock ticks.
cpu_ticks() { local p t=0; for p in "${PIDS[@]}"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }

# run_case SERVER NAME BENCH-ARGS...: one measurement on a fresh server, appended to $RESULTS. A
# first argument `via-follower` sends the load to a follower instead of the leader.
run_case() {
  local server=$1 name=$2; shift 2
  start_server "$server"
  local before after json target=$ENDPOINT
  if [ "${1:-}" = via-follower ]; then target=$FOLLOWER; shift; fi
  before=$(cpu_ticks)
  if [ "$CLIENT" = go ]; then
    json=$("$BENCH" "$@" --endpoint="$target" --server-pids="$(IFS=,; echo "${PIDS[*]}")")
  else
    json=$("$BENCH" "$@" --endpoints="$target" --json)
  fi
  after=$(cpu_ticks)
  # The loaded member's peak resident memory over the case.
  hwm=$(awk '/VmHWM/{print $2}' "/proc/$PID/status")
  stop_server
  python3 - "$server" "$name" "$json" "$((after - before))" "$hwm" >>"$RESULTS" <<'PY'
import json, sys
server, name, raw, ticks = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
# A watch case's own figure leaves its watchers' set-up out; otherwise the whole run counts.
raw.setdefault("server_cpu_s", ticks / 100.0)
raw.update(server=server, case=name, peak_rss_kb=int(sys.argv[5]))
print(json.dumps(raw))
PY
  echo "  $server $name: $(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%.0f ops/s, p99 %.1f ms" % (r["ops_per_sec"], r["latency_us"]["p99"] / 1000))' "$json")"
}

D="--duration $DURATION"
CASES=(
  "lease-grant|lease-grant --clients 256 --conns 16 $D"
  "lease-grant, 1 client|lease-grant --clients 1 --conns 1 $D"
  "lease-keepalive|lease-keepalive --clients 256 --conns 16 $D"
  "lease-timetolive|lease-timetolive --clients 256 --conns 16 $D"
  "put with lease|put --with-lease --clients 256 --conns 16 $D"
  "put|put --clients 256 --conns 16 $D"
  "put, next to 10000 idle watch streams|put --clients 64 --conns 16 --idle-watch-streams 10000 $D"
  "range, linearizable|range --clients 256 --conns 16 $D"
  "range, serializable|range --serializable --clients 256 --conns 16 $D"
  "txn-lock cycles, 64 clients on 64 locks|txn-lock --clients 64 --conns 16 $D"
  "lock hand-over cycles, 16 clients on 1 lock|txn-lock --clients 16 --locks 1 --conns 16 $D"
  "Lock RPC cycles, 64 clients on 64 locks|lock-rpc --clients 64 --conns 16 $D"
  "Lock RPC hand-over cycles, 16 clients on 1 lock|lock-rpc --clients 16 --locks 1 --conns 16 $D"
  "watch-fanout events, 1000 watchers, 10 puts/s|watch-fanout --clients 1000 --conns 16 --rate 10 $D"
  "watch-fanout events, 10000 watchers on 100 streams, 1 put/s|watch-fanout --clients 10000 --watchers-per-stream 100 --conns 16 --rate 1 $D"
  "watch-fanout events, 10000 watchers on 10000 streams, 1 put/s|watch-fanout --clients 10000 --conns 16 --rate 1 $D"
  "watch-fanout events, 10000 watchers on 1 stream, 1 put/s|watch-fanout --clients 10000 --watchers-per-stream 10000 --conns 1 --rate 1 $D"
  "watch-fanout events at saturation, 1000 watchers on 1 stream|watch-fanout --clients 1000 --watchers-per-stream 1000 --conns 1 --writers 16 $D"
  "watch-fanout events at saturation, 1000 watchers on 100 streams|watch-fanout --clients 1000 --watchers-per-stream 10 --conns 16 --writers 16 $D"
  "watch-fanout events at saturation, 1000 watchers on 1000 streams|watch-fanout --clients 1000 --conns 16 --writers 16 $D"
  "watch-fanout events at saturation, 10000 watchers on 1 stream|watch-fanout --clients 10000 --watchers-per-stream 10000 --conns 1 --writers 16 $D"
  "watch-fanout events at saturation, 10000 watchers on 100 streams|watch-fanout --clients 10000 --watchers-per-stream 100 --conns 16 --writers 16 $D"
  "watch-fanout events at saturation, 10000 watchers on 10000 streams|watch-fanout --clients 10000 --conns 16 --writers 16 $D"
)
# A follower forwards keep-alives to the leader (etcd's does the same).
[ "$NODES" = 3 ] && CASES+=("lease-keepalive through a follower|via-follower lease-keepalive --clients 256 --conns 16 $D")
if [ "$CLIENT" = go ]; then
  GD="--duration ${DURATION}s"
  # Watch fan-out as Go programs do it: clientv3 puts every watch of a client on one gRPC stream
  # unless their contexts' metadata differ; the stream and connection layout is explicit.
  W="watch-fanout $GD"
  CASES=(
    "lock hand-over cycles, 16 clients on 1 lock|lock-handover --clients 16 $GD"
    "watch: 1000 watchers on 1 stream, 16 writers|$W --watchers 1000 --streams 1 --conns 1 --writers 16"
    "watch: 1000 watchers on 100 streams, 16 writers|$W --watchers 1000 --streams 100 --conns 100 --writers 16"
    "watch: 10000 watchers on 100 streams, 16 writers|$W --watchers 10000 --streams 100 --conns 100 --writers 16"
    "watch: 10000 watchers on 10000 streams, 100 puts/s|$W --watchers 10000 --streams 10000 --conns 100 --rate 100"
    "watch: 10000 watchers on 10000 streams, 10 puts/s|$W --watchers 10000 --streams 10000 --conns 100 --rate 10"
    "watch: 10000 watchers on 10000 streams, 1 put/s|$W --watchers 10000 --streams 10000 --conns 100 --rate 1"
  )
fi
# wanted NAME: whether --only lets the case run.
wanted() { [ -z "$ONLY" ] || grep -qE -- "$ONLY" <<<"$1"; }
for r in $(seq 1 "$REPEATS"); do
  echo "repeat $r/$REPEATS"
  for c in "${CASES[@]}"; do
    name=${c%%|*}; args=${c#*|}
    wanted "$name" || continue
    if [ $((r % 2)) -eq 1 ]; then order="etcd leasehold"; else order="leasehold etcd"; fi
    for s in $order; do
      # shellcheck disable=SC2086
      run_case "$s" "$name" $args
    done
  done
done

if [ "$CLIENT" = cpp ]; then
for n in $STORM_LEASES; do
  wanted "expiry storm, $n leases" || continue
  echo "expiry storm ($n leases)"
  for s in etcd leasehold; do
    run_case "$s" "expiry storm, $n leases" expiry-storm --storm-leases "$n" --storm-ttl 5 \
      --storm-drain-timeout "$STORM_DRAIN_TIMEOUT" --clients 64 --conns 8
  done
done
fi

# restart_case SERVER CASE N TTL [--with-key]: grants N leases of TTL s (a key each with --with-key)
# on a fresh server and notes the leader's RSS; stops every member; with a TTL under an hour, waits
# until every lease is past due; starts the members again on their data and times how long until a
# linearizable read answers, then the RSS, and (short TTL) how long until every lease's key is gone
# (at most STORM_DRAIN_TIMEOUT s; -1 if not).
restart_case() {
  local server=$1 name=$2 n=$3 ttl=$4 with_key=${5:-} rss_before rss_after t0 t1 t2 drain=-1 count
  start_server "$server"
  "$BENCH" lease-grant --revoke=false $with_key --ttl "$ttl" --total "$n" --clients 128 --conns 8 \
    --endpoints="$ENDPOINT" --json >/dev/null
  local granted=$SECONDS
  sleep 2
  rss_before=$(awk '/VmRSS/{print $2}' "/proc/$PID/status")
  stop_server
  if [ "$ttl" -lt 3600 ]; then sleep $((granted + ttl + 1 - SECONDS > 0 ? granted + ttl + 1 - SECONDS : 0)); fi
  t0=$(date +%s.%N)
  start_server "$server" keep
  until ETCDCTL_API=3 etcdctl --endpoints="$ENDPOINT" --dial-timeout=200ms --command-timeout=1s \
    get x >/dev/null 2>&1; do sleep 0.05; done
  t1=$(date +%s.%N)
  if [ "$ttl" -lt 3600 ]; then
    while :; do
      count=$(ETCDCTL_API=3 etcdctl --endpoints="$ENDPOINT" get lease-keys/ --prefix --keys-only --limit 1 -w json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin).get("count", 0))' 2>/dev/null || echo -1)
      t2=$(date +%s.%N)
      # printf: bc writes .5 for 0.5, which is not JSON.
      if [ "$count" = 0 ]; then drain=$(printf '%.3f' "$(echo "$t2 - $t1" | bc)"); break; fi
      [ "$(echo "$t2 - $t1 > $STORM_DRAIN_TIMEOUT" | bc)" = 1 ] && break
      sleep 0.1
    done
  fi
  sleep 2
  rss_after=$(awk '/VmRSS/{print $2}' "/proc/$PID/status")
  stop_server
  echo "{\"server\":\"$server\",\"case\":\"$name\",\"leases\":$n,\"restart_s\":$(printf '%.3f' "$(echo "$t1 - $t0" | bc)"),\"drain_s\":$drain,\"rss_kb_before\":$rss_before,\"rss_kb\":$rss_after}" >>"$RESULTS"
  echo "  $server $name: serves after $(echo "$t1 - $t0" | bc) s, $((rss_before / 1024)) -> $((rss_after / 1024)) MiB, keys gone after ${drain} s"
}

if [ "$CLIENT" = cpp ]; then
for n in $RSS_LEASES; do
  for variant in "idle leases|" "leases with a key each|--with-key"; do
    name="restart with $n ${variant%%|*}"
    [ "$NODES" = 1 ] || [ "$n" = 100000 ] || continue  # a million is measured single node only
    wanted "$name" || continue
    echo "$name"
    for s in etcd leasehold; do restart_case "$s" "$name" "$n" 3600 "${variant#*|}"; done
  done
done
name="expiry backlog after a restart, $BACKLOG_LEASES leases"
if wanted "$name"; then
  echo "$name"
  # Due while the members are down: on their return every lease is expired at once.
  for s in etcd leasehold; do restart_case "$s" "$name" "$BACKLOG_LEASES" "$BACKLOG_TTL" --with-key; done
fi
fi

NODES=$NODES CLIENT=$CLIENT python3 scripts/benchmark_table.py "$RESULTS" "$COMMAND" "$REPEATS" "$DURATION" "$OUT"
cat "$OUT"
