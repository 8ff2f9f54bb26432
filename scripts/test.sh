#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs every test (unit, simulation, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j1 "$@"
