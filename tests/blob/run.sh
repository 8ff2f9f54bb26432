#!/usr/bin/env bash
# The blob adapter's conformance suite: installs the pinned @azure/storage-blob (package-lock.json)
# and runs every *.test.mjs with Node's test runner against fresh leasehold processes.
# usage: tests/blob/run.sh path/to/leasehold
set -euo pipefail
cd "$(dirname "$0")"
export LEASEHOLD_BINARY="$(realpath "${1:?usage: $0 path/to/leasehold}")"
[ -d node_modules/@azure/storage-blob ] || npm ci --no-audit --no-fund --silent
exec node --test --test-concurrency=4 .
