#!/usr/bin/env bash
# Configures (once) and builds everything into ./build. BUILD_DIR and BUILD_TYPE may override.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" "$@"
