#!/usr/bin/env bash
# Builds one of this repository's Go programs (client/go-bench, tests/go_clientv3) against Debian's
# Go sources: golang-etcd-server-dev and its dependencies under /usr/share/gocode, in GOPATH mode, so
# nothing is downloaded. Intermediate files go to build/go.
# usage: scripts/go-build.sh SOURCE_DIR OUTPUT
set -euo pipefail
src=$(realpath "${1:?usage: $0 SOURCE_DIR OUTPUT}")
out=$(realpath -m "${2:?usage: $0 SOURCE_DIR OUTPUT}")
work="$(realpath "$(dirname "$0")/..")/build/go"
mkdir -p "$work/src"
ln -sfn "$src" "$work/src/$(basename "$src")"
cd "$work/src/$(basename "$src")"
GO111MODULE=off GOPATH="$work:/usr/share/gocode" GOCACHE="$work/cache" GOFLAGS="" go build -o "$out" .
