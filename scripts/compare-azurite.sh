#!/usr/bin/env bash
# Side-by-side benchmark of Leasehold's Azure Blob lease adapter and Azurite (the storage emulator,
# from npm, run with --skipApiVersionCheck and its default on-disk persistence) in one run, with the
# same load generator (scripts/blob_bench.mjs) against both: lease acquire+release cycles on
# distinct blobs with 1 and 64 clients, then with many other blobs held under leases. Fresh servers
# for every repeat; medians and ratios go to docs/blob-benchmarks.md with the exact command.
#
# usage: scripts/compare-azurite.sh [--duration S] [--repeats N] [--leased-azurite N] [--leased-ours N]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DURATION=10
REPEATS=3
LEASED_AZURITE=10000
LEASED_OURS=100000
COMMAND="scripts/compare-azurite.sh $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --leased-azurite) LEASED_AZURITE=$2; shift 2 ;;
    --leased-ours) LEASED_OURS=$2; shift 2 ;;
    *) echo "unknown argument $1"; exit 2 ;;
  esac
done

scripts/install-deps.sh
scripts/build.sh --target leasehold
WORK="$ROOT/build/compare-azurite"
mkdir -p "$WORK/npm"
[ -x "$WORK/npm/node_modules/.bin/azurite-blob" ] ||
  npm install --prefix "$WORK/npm" --no-audit --no-fund --silent azurite@3.35.0 >/dev/null
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
PID=""
stop() { [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; PID=""; }
trap stop EXIT

start() { # server -> sets URL
  local port dir="$WORK/data-$1"
  port=$(free_port)
  rm -rf "$dir" && mkdir -p "$dir"
  if [ "$1" = azurite ]; then
    "$WORK/npm/node_modules/.bin/azurite-blob" --skipApiVersionCheck --silent --blobPort "$port" --location "$dir" \
      >"$WORK/azurite.log" 2>&1 &
  else
    build/server/leasehold --data-dir "$dir" --listen-client-urls "http://127.0.0.1:$(free_port)" \
      --listen-peer-urls "http://127.0.0.1:$(free_port)" --initial-advertise-peer-urls "http://127.0.0.1:$(free_port)" \
      --listen-blob-urls "http://127.0.0.1:$port" --log-level warn >"$WORK/leasehold.log" 2>&1 &
  fi
  PID=$!
  URL="http://127.0.0.1:$port/devstoreaccount1"
  for _ in $(seq 1 100); do
    node scripts/blob_bench.mjs --url "$URL" --clients 1 --duration 0 >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "$1 did not start"; exit 1
}

run() { # server case-name bench-args...
  local server=$1 name=$2; shift 2
  local line
  line=$(node scripts/blob_bench.mjs --url "$URL" --duration "$DURATION" "$@")
  echo "  $server $name: $line"
  echo "{\"server\":\"$server\",\"case\":\"$name\",\"result\":$line}" >>"$RESULTS"
}

for r in $(seq 1 "$REPEATS"); do
  order="leasehold azurite"
  [ $((r % 2)) = 0 ] && order="azurite leasehold"
  echo "repeat $r"
  for s in $order; do
    start "$s"
    run "$s" "1 client" --clients 1
    run "$s" "64 clients" --clients 64
    stop
  done
  for s in $order; do
    start "$s"
    n=$([ "$s" = azurite ] && echo "$LEASED_AZURITE" || echo "$LEASED_OURS")
    run "$s" "64 clients, $n other blobs leased" --clients 64 --leased "$n"
    run "$s" "1 client, $n other blobs leased" --clients 1
    stop
  done
done

python3 - "$RESULTS" "$COMMAND" "$DURATION" "$REPEATS" >docs/blob-benchmarks.md <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(server, case, field):
    vals = [r["result"][field] for r in rows if r["server"] == server and r["case"] == case]
    return statistics.median(vals) if vals else None
print("# Blob lease benchmarks: Leasehold vs Azurite\n")
print(f"Produced by `{sys.argv[2]}` ({sys.argv[4]} repeats of {sys.argv[3]} s, medians; fresh servers each repeat).")
print("Both servers driven by the same load generator, `scripts/blob_bench.mjs` (Node, keep-alive, SharedKey).")
print("A cycle is one Lease Blob acquire plus one release on the client's own blob. Leasehold fsyncs every")
print("write (its Raft log); Azurite keeps its state in memory and saves it to disk in the background.\n")
print("| case | Leasehold cycles/s | Azurite cycles/s | ratio | Leasehold p50 / p99 ms | Azurite p50 / p99 ms |")
print("|---|---|---|---|---|---|")
cases = []
for r in rows:
    if r["case"] not in cases: cases.append(r["case"])
paired = {c: c for c in cases}
for case in [c for c in cases if "other blobs" not in c]:
    o, a = med("leasehold", case, "cycles_per_s"), med("azurite", case, "cycles_per_s")
    print(f"| {case} | {o:.0f} | {a:.0f} | {o / a:.1f}x | {med('leasehold', case, 'p50_ms')} / {med('leasehold', case, 'p99_ms')} "
          f"| {med('azurite', case, 'p50_ms')} / {med('azurite', case, 'p99_ms')} |")
ours = [c for c in cases if "other blobs" in c and any(r["server"] == "leasehold" and r["case"] == c for r in rows)]
theirs = [c for c in cases if "other blobs" in c and any(r["server"] == "azurite" and r["case"] == c for r in rows)]
print("\nWith other blobs held under infinite leases (each server's own count):\n")
print("| server | case | cycles/s | p50 / p99 ms |")
print("|---|---|---|---|")
for server, cs in (("leasehold", ours), ("azurite", theirs)):
    for c in cs:
        print(f"| {server} | {c} | {med(server, c, 'cycles_per_s'):.0f} | {med(server, c, 'p50_ms')} / {med(server, c, 'p99_ms')} |")
PY
cat docs/blob-benchmarks.md
