#!/usr/bin/env bash
# Debian's python3-etcd3 client against Leasehold and against etcd 3.4: the same scenario
# (python_etcd3_scenario.py) on a fresh server of each must print the same thing.
source "$(dirname "$0")/lib.sh"
HERE=$(dirname "$0")
command -v etcd >/dev/null || { fail "etcd 3.4 (Debian's etcd-server) is needed as the reference"; e2e_finish; exit 1; }

e2e_start_server
/usr/bin/python3 "$HERE/python_etcd3_scenario.py" 127.0.0.1 "$PORT" >"$E2E_DIR/leasehold.json" 2>"$E2E_DIR/leasehold.err" ||
  fail "the scenario ran against Leasehold" "$(tail -5 "$E2E_DIR/leasehold.err")"
e2e_stop_server

e2e_start_etcd
/usr/bin/python3 "$HERE/python_etcd3_scenario.py" 127.0.0.1 "$ETCD_PORT" >"$E2E_DIR/etcd.json" 2>"$E2E_DIR/etcd.err" ||
  fail "the scenario ran against etcd" "$(tail -5 "$E2E_DIR/etcd.err")"
e2e_stop_etcd

# Most checks must succeed on etcd itself, or agreeing would prove little.
succeeded=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(not (isinstance(v, str) and v.startswith("error:")) for v in r.values()))' "$E2E_DIR/etcd.json" 2>/dev/null || echo 0)
if [ "$succeeded" -ge 15 ]; then
  pass "$succeeded of the scenario's checks succeed on etcd"
else
  fail "most of the scenario's checks succeed on etcd" "only $succeeded did; see $E2E_DIR/etcd.json"
fi
if diff -u "$E2E_DIR/etcd.json" "$E2E_DIR/leasehold.json" >"$E2E_DIR/diff"; then
  pass "python3-etcd3 sees the same from Leasehold as from etcd 3.4 ($(wc -l <"$E2E_DIR/etcd.json") lines)"
else
  fail "python3-etcd3 sees the same from Leasehold as from etcd 3.4" "$(head -60 "$E2E_DIR/diff")"
fi
e2e_finish
