#!/usr/bin/env bash
# Installs the Debian packages Leasehold builds and tests with, when any is missing. Idempotent.
# Extra package names given as arguments are installed too (scripts/fuzz.sh adds clang's).
set -euo pipefail
PACKAGES=(
  cmake ninja-build g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  librocksdb-dev libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libboost-dev libssl-dev libcrypt-dev prometheus-cpp-dev libyaml-cpp-dev libjemalloc-dev
  etcd-client etcd-server bc curl python3 python3-azure-storage
  iproute2 iptables patroni postgresql
  "$@"
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The blob adapter's conformance tests run the official Azure SDK for JavaScript: any Node.js with
# npm will do (Debian's, or one already on the machine).
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian starts etcd-server as a system service where it can; Leasehold's tests and benchmarks start
# their own etcd on other ports, so a stray one on 2379 would only get in the way of `run.sh`.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  $SUDO systemctl stop etcd || true
  $SUDO systemctl disable etcd || true
fi
