#!/usr/bin/env bash
# The etcd3 client for Node.js (npm's etcd3, pinned in tests/node_etcd3/package-lock.json) against
# Leasehold and against etcd 3.4: the same scenario (tests/node_etcd3/scenario.mjs) on a fresh
# server of each must print the same thing. So must tests/node_etcd3/auth_wire.mjs, which checks
# etcd's auth answers through raw gRPC (with the client's own grpc-js): refused watches, and tokens
# sent while auth is disabled.
source "$(dirname "$0")/lib.sh"
e2e_plan 4
CLIENT_DIR="$(dirname "$0")/../node_etcd3"
if [ -d "$CLIENT_DIR/node_modules/etcd3" ] || (cd "$CLIENT_DIR" && npm ci --no-audit --no-fund --silent); then
  e2e_same_as_etcd "the Node etcd3 client" 10 node "$CLIENT_DIR/scenario.mjs"
  e2e_same_as_etcd "raw gRPC on auth" 8 node "$CLIENT_DIR/auth_wire.mjs"
else
  fail "npm installed the etcd3 client"
fi
e2e_finish
