#!/usr/bin/env bash
# Installs what is missing, builds, and runs leasehold: the etcd v3 gRPC API on 127.0.0.1:2379,
# the Azure Blob lease adapter on the storage emulator's 127.0.0.1:10000, data in ./data. Any
# arguments are passed to leasehold (see `build/server/leasehold --help`); the blob URL is added
# unless they (or ETCD_LISTEN_BLOB_URLS, or a --config-file) say otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh --target leasehold
blob=(--listen-blob-urls http://127.0.0.1:10000)
for arg in "$@"; do
  case "$arg" in --listen-blob-urls* | --config-file*) blob=() ;; esac
done
[ -n "${ETCD_LISTEN_BLOB_URLS+x}" ] && blob=()
exec build/server/leasehold "${blob[@]}" "$@"
