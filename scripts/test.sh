#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs every test (unit, simulation, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
# The client compatibility tests' clients: python3-etcd3, and etcd's Go client with a Go toolchain.
scripts/install-deps.sh python3-etcd3 golang-go golang-etcd-server-dev
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j2 "$@"
