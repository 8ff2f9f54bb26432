#!/usr/bin/env bash
# Where a contended lock hand-over's time goes: runs leasehold-bench's hand-over (16 clients on one
# lock, etcd's Mutex protocol) against a fresh single-node Leasehold, and for each run prints the
# cycles/s and the two legs' p50 beside what the server and the machine spent on them:
#   - server CPU per cycle and voluntary context switches per cycle, by thread name
#     (gRPC's callback threads are "nexting_thread"; the node loop and responder carry the binary's name);
#   - synced Raft-log writes per cycle and their mean time (the server's own fsync histogram);
#   - the machine's CPU split over the run (/proc/stat: a busy machine means every wake-up waits);
#   - with --sched (needs perf): the mean delay between a thread's wake-up and its running, by name.
# With --etcd, etcd 3.4 runs the same hand-over in between, for the ratio. With --nosync, a second
# Leasehold runs it too with every fsync made a no-op (Debian's eatmydata; unsafe, for measuring
# only), to show how much of a cycle is the disk's. With --floor, each run first measures what no
# server can go below on this machine: a cycle's critical path holds one durable write (the holder's
# delete, which the next waiter may learn of only once it is synced) and one read (the waiter's
# check), so a cycle takes at least one uncontended write's round trip plus one read's (single
# client, p50), and the bare disk's fdatasync is shown beside them. Nothing is written to docs/.
#
#   scripts/handover-profile.sh [--runs N] [--duration S] [--sched] [--etcd] [--nosync] [--floor]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
. scripts/bench-lib.sh
RUNS=3 DURATION=5 SCHED=0 ETCD=0 NOSYNC=0 FLOOR=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --sched) SCHED=1; shift ;;
    --etcd) ETCD=1; shift ;;
    --nosync) NOSYNC=1; shift ;;
    --floor) FLOOR=1; shift ;;
    *) echo "usage: $0 [--runs N] [--duration S] [--sched] [--etcd] [--nosync] [--floor]" >&2; exit 2 ;;
  esac
done
if [ "$SCHED" = 1 ] && ! command -v perf >/dev/null; then echo "--sched needs perf (linux-perf)" >&2; exit 2; fi
scripts/install-deps.sh $([ "$NOSYNC" = 1 ] && echo eatmydata)
scripts/build.sh --target leasehold leasehold-bench
BENCH="$ROOT/build/client/leasehold-bench"
WORK="$ROOT/build/handover-profile"
rm -rf "$WORK" && mkdir -p "$WORK"
LH_PORT=22679 ETCD_PORT=22779 NOSYNC_PORT=22879
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT

launch_member leasehold m1 "$WORK/leasehold" $LH_PORT $((LH_PORT + 1)) "m1=http://127.0.0.1:$((LH_PORT + 1))" "$WORK/leasehold.log"
LH_PID=$!
PIDS+=("$LH_PID")
if [ "$ETCD" = 1 ]; then
  launch_member etcd m1 "$WORK/etcd" $ETCD_PORT $((ETCD_PORT + 1)) "m1=http://127.0.0.1:$((ETCD_PORT + 1))" "$WORK/etcd.log"
  PIDS+=("$!")
fi
if [ "$NOSYNC" = 1 ]; then
  WRAP=eatmydata launch_member leasehold m1 "$WORK/nosync" $NOSYNC_PORT $((NOSYNC_PORT + 1)) \
    "m1=http://127.0.0.1:$((NOSYNC_PORT + 1))" "$WORK/nosync.log"
  PIDS+=("$!")
fi
for port in $LH_PORT $([ "$ETCD" = 1 ] && echo $ETCD_PORT) $([ "$NOSYNC" = 1 ] && echo $NOSYNC_PORT); do
  for _ in $(seq 200); do is_leader "127.0.0.1:$port" && break; sleep 0.1; done
  is_leader "127.0.0.1:$port" || { echo "the member on port $port did not start"; exit 1; }
done

handover() { "$BENCH" txn-lock --endpoints="127.0.0.1:$1" --clients 16 --locks 1 --conns 16 --duration "$DURATION"; }
# tid name cpu_ticks voluntary_switches, for every thread of the server.
threads() {
  local t
  for t in /proc/"$LH_PID"/task/*; do
    awk -v tid="${t##*/}" -v name="$(tr ' ' _ <"$t/comm")" \
      'NR == FNR { split($0, s, ") "); split(s[2], f, " "); cpu = f[12] + f[13]; next }
       /^voluntary_ctxt_switches/ { print tid, name, cpu, $2 }' "$t/stat" "$t/status"
  done
}
fsyncs() {
  curl -s "http://127.0.0.1:$LH_PORT/metrics" |
    awk '/^etcd_disk_wal_fsync_duration_seconds_count/ { c = $2 } /^etcd_disk_wal_fsync_duration_seconds_sum/ { s = $2 } END { print c, s }'
}

# p50 in ms of one client's WORKLOAD (put or range) against the member on PORT.
single_client_p50() {
  "$BENCH" "$1" --endpoints="127.0.0.1:$2" --clients 1 --conns 1 --duration 3 2>&1 | awk '/^latency/ { print $3 }'
}
# p50 in ms of a 512-byte overwrite plus fdatasync in a preallocated file next to the data, the same
# kind of write a synced Raft-log append is on a preallocated log (storage/backend/wal_file_system.h).
fdatasync_p50() {
  python3 - "$WORK/fdatasync-probe" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.posix_fallocate(fd, 0, 16 << 20)
os.fsync(fd)
took = []
for i in range(1000):
    start = time.perf_counter()
    os.pwrite(fd, b"x" * 512, i * 4096)
    os.fdatasync(fd)
    took.append(time.perf_counter() - start)
os.close(fd)
os.unlink(sys.argv[1])
print("%.2f" % (sorted(took)[len(took) // 2] * 1000))
PY
}
floor() {
  local disk put range
  disk=$(fdatasync_p50) put=$(single_client_p50 put $LH_PORT) range=$(single_client_p50 range $LH_PORT)
  echo "floor: bare fdatasync p50 $disk ms; one client, uncontended: a write's round trip p50 $put ms, a read's $range ms"
  if [ "$ETCD" = 1 ]; then
    echo "       etcd 3.4, the same: a write's round trip p50 $(single_client_p50 put $ETCD_PORT) ms, a read's $(single_client_p50 range $ETCD_PORT) ms"
  fi
  awk -v w="$put" -v r="$range" 'BEGIN { c = w + r; printf "       so a hand-over cycle takes at least %.2f ms: at most %.0f cycles/s (10x etcd'"'"'s ~157/s needs a cycle every 0.64 ms)\n", c, 1000 / c }'
}

TICK_MS=$((1000 / $(getconf CLK_TCK)))
for run in $(seq "$RUNS"); do
  if [ "$FLOOR" = 1 ]; then
    echo "== run $run: the floor"
    floor
  fi
  if [ "$ETCD" = 1 ]; then
    echo "== run $run: etcd 3.4"
    handover $ETCD_PORT >"$WORK/etcd.out" 2>&1 || true
    grep -E '^ops|^latency|handover' "$WORK/etcd.out" || cat "$WORK/etcd.out"
  fi
  if [ "$NOSYNC" = 1 ]; then
    echo "== run $run: leasehold, fsync a no-op"
    handover $NOSYNC_PORT >"$WORK/nosync.out" 2>&1 || true
    grep -E '^ops|^latency|handover' "$WORK/nosync.out" || cat "$WORK/nosync.out"
  fi
  echo "== run $run: leasehold"
  threads >"$WORK/threads.before"
  read -r syncs_before sync_s_before < <(fsyncs)
  read -r _ u0 n0 s0 i0 w0 q0 sq0 _ < /proc/stat
  if [ "$SCHED" = 1 ]; then
    (sleep 1 && perf sched record -o "$WORK/sched.data" -- sleep 1 >/dev/null 2>&1) &
    SCHED_PID=$!
  fi
  handover $LH_PORT >"$WORK/bench.out" 2>&1 || true
  [ "$SCHED" = 1 ] && wait "$SCHED_PID"
  read -r _ u1 n1 s1 i1 w1 q1 sq1 _ < /proc/stat
  read -r syncs_after sync_s_after < <(fsyncs)
  threads >"$WORK/threads.after"
  cycles=$(awk '/^ops/ { print $2 }' "$WORK/bench.out")
  if [ -z "$cycles" ] || [ "$cycles" = 0 ]; then
    echo "the hand-over completed no cycle:"; cat "$WORK/bench.out"; continue
  fi
  grep -E '^ops|^latency|handover' "$WORK/bench.out"
  echo "server, per cycle, by thread name:"
  join <(sort "$WORK/threads.before") <(sort "$WORK/threads.after") |
    awk -v cycles="$cycles" -v tick="$TICK_MS" '{ cpu[$2] += ($6 - $3) * tick; vcs[$2] += $7 - $4 }
      END { for (n in cpu) if (cpu[n] > 0 || vcs[n] > 0)
              printf "  %-18s cpu %6.0f us  voluntary switches %5.2f\n", n, cpu[n] * 1000 / cycles, vcs[n] / cycles }' |
    sort -k3 -n -r
  awk -v c0="$syncs_before" -v c1="$syncs_after" -v s0="$sync_s_before" -v s1="$sync_s_after" -v cycles="$cycles" \
    'BEGIN { n = c1 - c0; printf "synced log writes: %.2f per cycle, mean %.0f us\n", n / cycles, n ? (s1 - s0) / n * 1e6 : 0 }'
  total=$(( (u1 + n1 + s1 + i1 + w1 + q1 + sq1) - (u0 + n0 + s0 + i0 + w0 + q0 + sq0) ))
  awk -v t="$total" -v u=$((u1 + n1 - u0 - n0)) -v s=$((s1 - s0)) -v sq=$((q1 + sq1 - q0 - sq0)) -v i=$((i1 - i0)) -v w=$((w1 - w0)) \
    'BEGIN { printf "machine: user %.0f%%  system %.0f%%  irq %.0f%%  idle %.0f%%  iowait %.0f%%\n",
             100 * u / t, 100 * s / t, 100 * sq / t, 100 * i / t, 100 * w / t }'
  if [ "$SCHED" = 1 ]; then
    echo "wake-up to running, mean over 1 s (all processes, by thread name):"
    perf sched timehist -i "$WORK/sched.data" 2>/dev/null |
      awk 'NR > 3 && NF >= 6 { split($3, a, "["); n[a[1]]++; d[a[1]] += $5 }
           END { for (k in n) if (n[k] >= 100) printf "  %-18s wake-ups %6d  delay %5.1f us\n", k, n[k], d[k] * 1000 / n[k] }' |
      sort -k3 -n -r | head -8
  fi
done
