#!/usr/bin/env bash
# etcd's own Go client (clientv3 3.4 from Debian's golang-etcd-server-dev: its concurrency Mutex and
# Election, the Lock and Election services' Go clients, watches, leases) against Leasehold and
# against etcd 3.4: the same scenario (tests/go_clientv3/scenario.go) on a fresh server of each must
# print the same thing.
source "$(dirname "$0")/lib.sh"
e2e_plan 2
ROOT="$(dirname "$0")/../.."
if "$ROOT/scripts/go-build.sh" "$ROOT/tests/go_clientv3" "$E2E_DIR/go-scenario" >"$E2E_DIR/go-build.log" 2>&1; then
  e2e_same_as_etcd "etcd's Go client" 6 "$E2E_DIR/go-scenario"
else
  fail "the Go scenario builds" "$(tail -20 "$E2E_DIR/go-build.log")"
fi
e2e_finish
