#!/usr/bin/env bash
# A long fault-injection campaign: segments of up to 10 minutes, alternating 3- and 5-member
# clusters, each a fresh cluster under the chosen nemeses, checked at its end.
#   scripts/fault-campaign.sh [--time SECONDS] [--seed N] [--nemesis kinds|all] [--out DIR]
# Defaults: 3600 s, seed 1, all nemeses (kill, powercut, pause, partition, loss, delay, blackhole), out
# fault-reports/<date>. Writes DIR/segment-K/{summary.txt,history.txt,report.html} and
# DIR/summary.txt, DIR/index.html over all segments. Needs root (network namespaces, iptables).
# Exit status: 0 when every segment found no anomaly.
set -uo pipefail
cd "$(dirname "$0")/.."
TIME=3600; SEED=1; NEMESIS=all; OUT="fault-reports/$(date +%Y%m%d-%H%M%S)"; SEGMENT=600
while [ $# -gt 0 ]; do
  case "$1" in
    --time) TIME=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --nemesis) NEMESIS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --segment) SEGMENT=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
scripts/install-deps.sh
scripts/build.sh --target leasehold leasehold-faults >/dev/null
mkdir -p "$OUT"
left=$TIME; k=0; failed=0; ops=0; faults=0; anomalies=0
while [ "$left" -gt 0 ]; do
  k=$((k + 1)); span=$(( left < SEGMENT ? left : SEGMENT )); left=$((left - span))
  nodes=$(( k % 2 == 1 ? 3 : 5 ))
  echo "== segment $k: $nodes members, $span s, seed $((SEED + k))"
  build/tests/faults/leasehold-faults --binary build/server/leasehold --nodes "$nodes" --time "$span" \
    --seed $((SEED + k)) --nemesis "$NEMESIS" --out "$OUT/segment-$k" | tail -n 12
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 77 ] && { echo "network namespaces unavailable: campaign skipped"; exit 77; }
  [ "$rc" -ne 0 ] && failed=1
  s="$OUT/segment-$k/summary.txt"
  ops=$((ops + $(sed -n 's/^operations: \([0-9]*\).*/\1/p' "$s")))
  faults=$((faults + $(sed -n 's/^faults injected: \([0-9]*\).*/\1/p' "$s")))
  anomalies=$((anomalies + $(sed -n 's/^anomalies: \([0-9]*\).*/\1/p' "$s")))
  [ "$rc" -eq 0 ] && rm -rf "$OUT/segment-$k/cluster"  # member data and logs, kept when the segment failed
done
{
  echo "campaign: $TIME s in $k segments (3 and 5 members alternating), seed $SEED, nemesis $NEMESIS"
  echo "operations: $ops"
  echo "faults injected: $faults"
  echo "anomalies: $anomalies"
  for s in "$OUT"/segment-*/summary.txt; do echo; echo "--- $(dirname "$s" | xargs basename)"; cat "$s"; done
} >"$OUT/summary.txt"
{
  echo "<!doctype html><meta charset=utf-8><title>Leasehold fault campaign</title><body style='font-family:sans-serif'>"
  echo "<h1>Fault campaign</h1><pre>$(head -4 "$OUT/summary.txt")</pre><ul>"
  for d in "$OUT"/segment-*; do b=$(basename "$d"); echo "<li><a href='$b/report.html'>$b</a>: $(head -1 "$d/summary.txt")</li>"; done
  echo "</ul></body>"
} >"$OUT/index.html"
head -4 "$OUT/summary.txt"
echo "report: $OUT/index.html"
exit $failed
