# Shared helpers for end-to-end tests: start/stop a leasehold server on a free port with its own data
# dir, run etcdctl against it, and record checks. Source it; call e2e_finish at the end.
set -u
LEASEHOLD_BIN="${1:?usage: $0 path/to/leasehold}"
export ETCDCTL_API=3
E2E_DIR=$(mktemp -d /tmp/leasehold-e2e.XXXXXX)
E2E_PASSED=0
E2E_FAILED=0
E2E_PLANNED=""
SERVER_PID=""
trap 'e2e_stop_server; e2e_stop_etcd; rm -rf "$E2E_DIR"' EXIT

# A port to listen on: below the kernel's ephemeral range (32768 and up), where the source port of
# some outgoing connection could take it before the server binds it, and never one handed out in
# the last half hour to this or any other test on the machine (the test command runs two at once,
# and a port picked but not yet bound looks free): /tmp/leasehold-e2e-ports records them, under a
# lock (this test's own record if that file is another user's).
free_port() {
  python3 - "$E2E_DIR/ports" <<'PY'
import fcntl, random, socket, sys, time
try:
    registry = open("/tmp/leasehold-e2e-ports", "a+")
except OSError:  # another user's record: keep one of this test's own
    registry = open(sys.argv[1], "a+")
with registry:
    fcntl.flock(registry, fcntl.LOCK_EX)
    registry.seek(0)
    now = time.time()
    recent = {}
    for line in registry.read().split("\n"):
        fields = line.split()
        try:
            if len(fields) == 2 and now - float(fields[1]) < 1800:
                recent[fields[0]] = fields[1]
        except ValueError:  # a torn line: drop it
            pass
    while True:
        port = random.randint(20000, 32000)
        if str(port) in recent:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        break
    recent[str(port)] = "%.0f" % now
    registry.seek(0)
    registry.truncate()
    registry.write("".join("%s %s\n" % item for item in recent.items()))
    print(port)
PY
}

PORT=$(free_port)
PEER_PORT=$(free_port)
EP="127.0.0.1:$PORT"
ctl() { timeout 20 etcdctl --endpoints="$EP" --dial-timeout=2s --command-timeout=5s "$@"; }

# Starts the server on $PORT with data in $E2E_DIR/data (kept across restarts); extra flags pass through.
e2e_start_server() {
  "$LEASEHOLD_BIN" --name e2e --data-dir "$E2E_DIR/data" --listen-client-urls "http://$EP" \
    --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" "$@" \
    >>"$E2E_DIR/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    if ctl endpoint status >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "server did not start; log:"; cat "$E2E_DIR/server.log"; exit 1
}

e2e_stop_server() { # [signal]
  [ -n "$SERVER_PID" ] || return 0
  kill "-${1:-TERM}" "$SERVER_PID" 2>/dev/null
  wait "$SERVER_PID" 2>/dev/null
  SERVER_PID=""
}

# Starts Debian's etcd 3.4 as the reference, single node with data in $E2E_DIR/etcd, and waits until
# it is healthy: sets ETCD_PORT and ETCD_PID. e2e_stop_etcd ends it.
e2e_start_etcd() { # [extra etcd flags]
  ETCD_PORT=$(free_port)
  local peer
  peer=$(free_port)
  etcd --name ref --data-dir "$E2E_DIR/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "ref=http://127.0.0.1:$peer" "$@" \
    >"$E2E_DIR/etcd.log" 2>&1 &
  ETCD_PID=$!
  for _ in $(seq 1 100); do etcdctl --endpoints="127.0.0.1:$ETCD_PORT" endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
}

e2e_stop_etcd() {
  [ -n "${ETCD_PID:-}" ] || return 0
  kill "$ETCD_PID" 2>/dev/null
  wait "$ETCD_PID" 2>/dev/null
  ETCD_PID=""
}

# A client's scenario on a fresh Leasehold and on a fresh etcd 3.4: runs `COMMAND... host:port`
# against each (it prints JSON: one value per check, "error: ..." for a check that failed), then
# requires at least MIN_SUCCEEDED checks to succeed on etcd (or agreeing would prove little) and the
# two outputs to be identical. The two runs go side by side: the scenarios spend most of their time
# waiting (for expiries, elections, watch events), so this halves the test's time.
# usage: e2e_same_as_etcd CLIENT_NAME MIN_SUCCEEDED COMMAND...
e2e_same_as_etcd() {
  local client=$1 min=$2 succeeded on_leasehold on_etcd
  shift 2
  command -v etcd >/dev/null || { fail "etcd 3.4 (Debian's etcd-server) is needed as the reference"; return; }
  e2e_start_server
  e2e_start_etcd
  "$@" "$EP" >"$E2E_DIR/leasehold.json" 2>"$E2E_DIR/leasehold.err" &
  on_leasehold=$!
  "$@" "127.0.0.1:$ETCD_PORT" >"$E2E_DIR/etcd.json" 2>"$E2E_DIR/etcd.err" &
  on_etcd=$!
  wait "$on_leasehold" || fail "$client's scenario ran against Leasehold" "$(tail -5 "$E2E_DIR/leasehold.err")"
  wait "$on_etcd" || fail "$client's scenario ran against etcd" "$(tail -5 "$E2E_DIR/etcd.err")"
  e2e_stop_server
  e2e_stop_etcd
  succeeded=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(sum(not (isinstance(v, str) and v.startswith("error:")) for v in r.values()))' "$E2E_DIR/etcd.json" 2>/dev/null || echo 0)
  if [ "$succeeded" -ge "$min" ]; then
    pass "$succeeded of $client's checks succeed on etcd"
  else
    fail "at least $min of $client's checks succeed on etcd" "only $succeeded did: $(head -c 2000 "$E2E_DIR/etcd.json")"
  fi
  if diff -u "$E2E_DIR/etcd.json" "$E2E_DIR/leasehold.json" >"$E2E_DIR/diff"; then
    pass "$client sees the same from Leasehold as from etcd 3.4 ($(wc -l <"$E2E_DIR/etcd.json") lines)"
  else
    fail "$client sees the same from Leasehold as from etcd 3.4 (- etcd, + Leasehold)" "$(head -80 "$E2E_DIR/diff")"
  fi
}

pass() { E2E_PASSED=$((E2E_PASSED + 1)); echo "ok   - $1"; }
fail() { E2E_FAILED=$((E2E_FAILED + 1)); echo "FAIL - $1"; [ $# -gt 1 ] && printf '       %s\n' "$2"; }

# check NAME EXPECTED ACTUAL: exact comparison
check() { if [ "$2" == "$3" ]; then pass "$1"; else fail "$1" "expected [$2] got [$3]"; fi; }
# check_match NAME REGEX ACTUAL
check_match() { if [[ "$3" =~ $2 ]]; then pass "$1"; else fail "$1" "expected /$2/ got [$3]"; fi; }

# run_ctl ARGS...: sets OUT (stdout), ERR (stderr without etcdctl's JSON retry warnings), RC.
run_ctl() {
  OUT=$(ctl "$@" 2>"$E2E_DIR/err"); RC=$?
  ERR=$(grep -v '"level":"warn"' "$E2E_DIR/err")
}

# e2e_plan N: the script runs N checks; e2e_finish fails it when another number ran (a check skipped
# by an early branch must not pass silently).
e2e_plan() { E2E_PLANNED=$1; }

e2e_finish() {
  local ran=$((E2E_PASSED + E2E_FAILED))
  if [ -n "$E2E_PLANNED" ] && [ "$ran" -ne "$E2E_PLANNED" ]; then
    fail "the planned checks ran" "planned $E2E_PLANNED, ran $ran"
  fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null && [ -n "$SERVER_PID" ]; then fail "server still running at the end"; fi
  echo "$E2E_PASSED passed, $E2E_FAILED failed"
  [ "$E2E_FAILED" -eq 0 ]
}
