#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into ./build-fuzz and runs each for a bounded time.
#   scripts/fuzz.sh [--seconds N] [--jobs J] [target...]
# Targets: raft_step_fuzz state_machine_apply_fuzz blob_http_fuzz tls_client_hello_fuzz (all by default). Each run starts
# from tests/fuzz/corpus/<target> (the kept regression inputs) plus its growing corpus in
# build-fuzz/corpus/<target>; a crash leaves its input in build-fuzz/crashes/<target>/ and makes the
# script exit non-zero. Fixed crashes' inputs belong in tests/fuzz/corpus/<target>/, which the
# normal test command replays (ctest -R fuzz.).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=600
JOBS=1
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(raft_step_fuzz state_machine_apply_fuzz blob_http_fuzz tls_client_hello_fuzz)
scripts/install-deps.sh clang libclang-rt-14-dev
BUILD=build-fuzz
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLEASEHOLD_FUZZ=ON
fi
cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}"
status=0
for t in "${TARGETS[@]}"; do
  mkdir -p "$BUILD/corpus/$t" "$BUILD/crashes/$t"
  echo "== $t: ${SECONDS_EACH}s"
  parallel=()
  [ "$JOBS" -gt 1 ] && parallel=(-jobs="$JOBS" -workers="$JOBS")  # each job then logs to fuzz-N.log
  if ! TMPDIR=/dev/shm "$BUILD/tests/fuzz/$t" -max_total_time="$SECONDS_EACH" "${parallel[@]}" \
      -artifact_prefix="$BUILD/crashes/$t/" -print_final_stats=1 -timeout=20 -rss_limit_mb=4096 \
      "$BUILD/corpus/$t" "tests/fuzz/corpus/$t" >"$BUILD/$t.log" 2>&1; then
    echo "$t: crashed; input in $BUILD/crashes/$t/, log in $BUILD/$t.log"; status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov: " "$BUILD/$t.log" | tail -3
done
exit $status
