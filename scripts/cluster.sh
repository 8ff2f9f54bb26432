#!/usr/bin/env bash
# Builds and runs a 3-member Leasehold cluster on this machine with etcd's port conventions:
# clients on 2379/22379/32379, peers on 2380/22380/32380, data in ./data-cluster/<name>.
# Stop it with Ctrl-C (each member's log is in ./data-cluster/<name>.log).
#   etcdctl --endpoints=127.0.0.1:2379,127.0.0.1:22379,127.0.0.1:32379 member list -w table
# Any arguments are passed to every member (e.g. --log-level warn).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh --target leasehold
DATA=${DATA:-data-cluster}
mkdir -p "$DATA"
CLUSTER="infra1=http://127.0.0.1:2380,infra2=http://127.0.0.1:22380,infra3=http://127.0.0.1:32380"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait' INT TERM EXIT
for i in 1 2 3; do
  prefix=$([ "$i" = 1 ] && echo "" || echo "${i}")
  client="http://127.0.0.1:${prefix}2379"; peer="http://127.0.0.1:${prefix}2380"
  build/server/leasehold --name "infra$i" --data-dir "$DATA/infra$i" \
    --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --listen-blob-urls "http://127.0.0.1:$((9999 + i))" \
    --initial-cluster "$CLUSTER" --initial-cluster-token leasehold-cluster-1 --initial-cluster-state new \
    "$@" >>"$DATA/infra$i.log" 2>&1 &
  pids+=($!)
done
echo "cluster running: clients on 127.0.0.1:2379,127.0.0.1:22379,127.0.0.1:32379, blob adapters on 127.0.0.1:10000-10002 (Ctrl-C stops it)"
wait
