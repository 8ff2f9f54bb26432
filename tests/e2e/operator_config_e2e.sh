#!/usr/bin/env bash
# etcd's operator configuration, side by side with etcd 3.4 configured alike: a member configured by
# ETCD_* environment variables alone, one by a --config-file (etcd's YAML keys, with a
# client-transport-security block) whose settings win over the command line and the environment,
# and the refusals etcd gives (a variable shadowed by its flag, a value of the wrong type); unix://
# client and peer URLs.
source "$(dirname "$0")/lib.sh"
e2e_plan 12

SERVERS=(leasehold etcd)
binary() { if [ "$1" = leasehold ]; then realpath "$LEASEHOLD_BIN"; else echo etcd; fi; }

# Waits until `etcdctl ARGS... endpoint health` succeeds (up to 10 s) or PID ends.
wait_healthy() { # pid etcdctl-args...
  local pid=$1
  shift
  for _ in $(seq 1 100); do
    etcdctl "$@" endpoint health >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

stop() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# `etcdctl member list` with the member id and the ports written as names, so that two servers'
# answers compare.
member_list() { # client-port peer-port etcdctl-args...
  local cp=$1 pp=$2
  shift 2
  etcdctl "$@" member list 2>&1 | sed -E "s/^[0-9a-f]+,/ID,/; s/:$cp\b/:CLIENT/g; s/:$pp\b/:PEER/g"
}

# 1. ETCD_* alone.
declare -A LIST
for server in "${SERVERS[@]}"; do
  CP=$(free_port); PP=$(free_port)
  env ETCD_NAME=infra1 ETCD_DATA_DIR="$E2E_DIR/env-$server" \
    ETCD_LISTEN_CLIENT_URLS="http://127.0.0.1:$CP" ETCD_ADVERTISE_CLIENT_URLS="http://127.0.0.1:$CP" \
    ETCD_LISTEN_PEER_URLS="http://127.0.0.1:$PP" ETCD_INITIAL_ADVERTISE_PEER_URLS="http://127.0.0.1:$PP" \
    ETCD_INITIAL_CLUSTER="infra1=http://127.0.0.1:$PP" ETCD_INITIAL_CLUSTER_TOKEN=env-token \
    "$(binary "$server")" >"$E2E_DIR/env-$server.log" 2>&1 &
  PID=$!
  wait_healthy "$PID" --endpoints="127.0.0.1:$CP" || fail "$server configured by ETCD_* starts" "$(tail -3 "$E2E_DIR/env-$server.log")"
  LIST[$server]=$(member_list "$CP" "$PP" --endpoints="127.0.0.1:$CP")
  stop "$PID"
done
check "configured by ETCD_* alone: member list as etcd's" "${LIST[etcd]}" "${LIST[leasehold]}"
check "and it names the member and its URLs from the environment" \
  "ID, started, infra1, http://127.0.0.1:PEER, http://127.0.0.1:CLIENT, false" "${LIST[leasehold]}"

# 2. A variable shadowed by its flag stops the start, with etcd's message.
SHADOWED='conflicting environment variable "ETCD_NAME" is shadowed by corresponding command-line flag (either unset environment variable or disable flag)'
for server in "${SERVERS[@]}"; do
  OUT=$(ETCD_NAME=a timeout 10 "$(binary "$server")" --name b --data-dir "$E2E_DIR/shadow-$server" 2>&1); RC=$?
  check "$server: a shadowed ETCD_NAME stops the start with etcd's message" "refused 1" \
    "$([ "$RC" -ne 0 ] && echo refused) $(grep -cF "$SHADOWED" <<<"$OUT")"
done

# 3. --config-file with a TLS block: the file's settings win over the flags and ETCD_* given too.
PKI="$E2E_DIR/pki"
mkdir -p "$PKI"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=ca" -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
for name in server client; do
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$PKI/$name.key" -out "$PKI/$name.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 2 \
    -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
done
declare -A WITH_CERT WITHOUT_CERT
for server in "${SERVERS[@]}"; do
  CP=$(free_port); PP=$(free_port)
  cat >"$E2E_DIR/$server.conf.yml" <<YAML
# etcd.conf.yml, etcd 3.4's keys
name: 'from-file'
data-dir: $E2E_DIR/file-$server
listen-client-urls: https://127.0.0.1:$CP
advertise-client-urls: https://127.0.0.1:$CP
listen-peer-urls: http://127.0.0.1:$PP
initial-advertise-peer-urls: http://127.0.0.1:$PP
initial-cluster: from-file=http://127.0.0.1:$PP
initial-cluster-token: 'file-token'
initial-cluster-state: 'new'
heartbeat-interval: 100
election-timeout: 1000
snapshot-count: 10000
quota-backend-bytes: 0
grpc-keepalive-min-time: 5000000000
strict-reconfig-check: true
enable-v2: false
wal-dir:
discovery:
proxy: 'off'
log-outputs: [stderr]
auto-compaction-mode: periodic
auto-compaction-retention: "1"
client-transport-security:
  cert-file: $PKI/server.crt
  key-file: $PKI/server.key
  client-cert-auth: true
  trusted-ca-file: $PKI/ca.crt
  auto-tls: false
peer-transport-security:
  client-cert-auth: false
  auto-tls: false
YAML
  TLS=(--endpoints="127.0.0.1:$CP" --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key")
  ETCD_NAME=from-env "$(binary "$server")" --config-file "$E2E_DIR/$server.conf.yml" --name from-flag \
    >"$E2E_DIR/file-$server.log" 2>&1 &
  PID=$!
  wait_healthy "$PID" "${TLS[@]}" || fail "$server configured by a file starts" "$(tail -3 "$E2E_DIR/file-$server.log")"
  LIST[$server]=$(member_list "$CP" "$PP" "${TLS[@]}")
  WITH_CERT[$server]=$(etcdctl "${TLS[@]}" put k v 2>&1)
  WITHOUT_CERT[$server]=$(timeout 10 etcdctl --endpoints="127.0.0.1:$CP" --cacert "$PKI/ca.crt" \
    --dial-timeout=2s --command-timeout=3s put k v >/dev/null 2>&1 && echo served || echo refused)
  stop "$PID"
done
check "configured by a file: member list as etcd's (the file's name, https client URL)" "${LIST[etcd]}" "${LIST[leasehold]}"
check "and the file's name wins over --name and ETCD_NAME" \
  "ID, started, from-file, http://127.0.0.1:PEER, https://127.0.0.1:CLIENT, false" "${LIST[leasehold]}"
check "the client-transport-security block: a client with a certificate is served, as by etcd" \
  "${WITH_CERT[etcd]} ${WITHOUT_CERT[etcd]}" "${WITH_CERT[leasehold]} ${WITHOUT_CERT[leasehold]}"
check "and one without a certificate refused" refused "${WITHOUT_CERT[leasehold]}"
check "Leasehold says it loaded the file and ignores the rest" 1 \
  "$(grep -c '"msg":"loaded server configuration, other configuration command line flags and environment variables will be ignored if provided"' "$E2E_DIR/file-leasehold.log")"

# 4. A value of the wrong type in the file stops the start on both.
declare -A BAD
printf 'name: bad\nheartbeat-interval: often\n' >"$E2E_DIR/bad.conf.yml"
for server in "${SERVERS[@]}"; do
  OUT=$(timeout 10 "$(binary "$server")" --config-file "$E2E_DIR/bad.conf.yml" 2>&1); RC=$?
  [ "$server" = leasehold ] && BAD_OUT=$OUT
  BAD[$server]=$([ "$RC" -ne 0 ] && echo refused || echo started)
done
check "a value of the wrong type stops the start, on etcd and on Leasehold, naming the key" \
  "refused refused 1" "${BAD[etcd]} ${BAD[leasehold]} $(grep -c 'heartbeat-interval must be a whole number' <<<"$BAD_OUT")"

# 5. unix:// client and peer URLs: sockets named host:port in the working directory, as etcd's.
declare -A UNIX_LIST UNIX_PUT UNIX_LEFT
for server in "${SERVERS[@]}"; do
  mkdir -p "$E2E_DIR/unix-$server"
  BIN=$(binary "$server")  # before the cd: the path given may be relative
  (cd "$E2E_DIR/unix-$server" && exec "$BIN" --name u --data-dir data \
    --listen-client-urls unix://localhost:12379 --advertise-client-urls unix://localhost:12379 \
    --listen-peer-urls unix://localhost:12380 --initial-advertise-peer-urls unix://localhost:12380 \
    --initial-cluster u=unix://localhost:12380 >"$E2E_DIR/unix-$server.log" 2>&1) &
  PID=$!
  U=(--endpoints=unix://localhost:12379)
  (cd "$E2E_DIR/unix-$server" && wait_healthy "$PID" "${U[@]}") || fail "$server on unix:// URLs starts" "$(tail -3 "$E2E_DIR/unix-$server.log")"
  UNIX_LIST[$server]=$(cd "$E2E_DIR/unix-$server" && etcdctl "${U[@]}" member list 2>&1 | sed -E 's/^[0-9a-f]+,/ID,/')
  UNIX_PUT[$server]=$(cd "$E2E_DIR/unix-$server" && etcdctl "${U[@]}" put k v 2>&1 && etcdctl "${U[@]}" get k --print-value-only 2>&1)
  stop "$PID"
  UNIX_LEFT[$server]=$(cd "$E2E_DIR/unix-$server" && ls -d localhost:* 2>/dev/null | tr '\n' ' ')
done
check "unix:// client and peer URLs: member list as etcd's" "${UNIX_LIST[etcd]}" "${UNIX_LIST[leasehold]}"
check "served through the socket, and the socket files removed at the stop, as by etcd" \
  "${UNIX_PUT[etcd]} [${UNIX_LEFT[etcd]}]" "${UNIX_PUT[leasehold]} [${UNIX_LEFT[leasehold]}]"

e2e_finish
