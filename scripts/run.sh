#!/usr/bin/env bash
# Installs what is missing, builds, and runs leasehold: the etcd v3 gRPC API on 127.0.0.1:2379,
# data in ./data. Any arguments are passed to leasehold (see `build/server/leasehold --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh --target leasehold
exec build/server/leasehold "$@"
