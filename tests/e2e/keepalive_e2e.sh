#!/usr/bin/env bash
# etcd's gRPC keepalive flags, beside etcd 3.4 configured alike: a client pinging every second
# with a stream open (grpc_pinger.py) is sent GOAWAY "too_many_pings" under the default
# --grpc-keepalive-min-time 5s and kept under 500ms; pinging without a call open, it is sent GOAWAY
# either way (a ping every two hours is all grpc-go lets through then); with
# --grpc-keepalive-interval 1s and --grpc-keepalive-timeout 1s the server pings a quiet stream's
# connection and closes it once its client (a stopped etcdctl watch) cannot answer.
source "$(dirname "$0")/lib.sh"
e2e_plan 7
PINGER=("/usr/bin/python3" "$(dirname "$0")/grpc_pinger.py")

# Both pingers at once (stream|nostream): prints "leasehold-result etcd-result".
ping_both() {
  "${PINGER[@]}" "$EP" "$1" >"$E2E_DIR/lh.ping" 2>>"$E2E_DIR/pinger.err" &
  local lh=$!
  "${PINGER[@]}" "127.0.0.1:$ETCD_PORT" "$1" >"$E2E_DIR/etcd.ping" 2>>"$E2E_DIR/pinger.err"
  wait "$lh"
  echo "$(cat "$E2E_DIR/lh.ping") $(cat "$E2E_DIR/etcd.ping")"
}

e2e_start_server
e2e_start_etcd
check "default min time (5s): a client pinging every second is sent GOAWAY by both (Leasehold, etcd)" \
  "goaway goaway" "$(ping_both stream)"
check_match "with grpc-go's reason" 'too_many_pings' "$(cat "$E2E_DIR/pinger.err")"
e2e_stop_server; e2e_stop_etcd
rm -rf "$E2E_DIR/data" "$E2E_DIR/etcd"

FLAGS=(--grpc-keepalive-min-time 500ms --grpc-keepalive-interval 1s --grpc-keepalive-timeout 1s)
e2e_start_server "${FLAGS[@]}"
e2e_start_etcd "${FLAGS[@]}"
check "--grpc-keepalive-min-time 500ms: the same client is kept by both" "kept kept" "$(ping_both stream)"
check "but pinging with no call open, it is sent GOAWAY by both" "goaway goaway" "$(ping_both nostream)"
# A watch whose process is stopped: its connection stays open but answers no ping.
for port in "$PORT" "$ETCD_PORT"; do
  etcdctl --endpoints="127.0.0.1:$port" watch quiet >/dev/null 2>&1 &
  WATCHERS+=($!)
done
sleep 1
kill -STOP "${WATCHERS[@]}"
closed() { ss -Htn state close-wait "( dport = :$1 )" | wc -l; }
for _ in $(seq 1 80); do
  [ "$(closed "$PORT")" -ge 1 ] && [ "$(closed "$ETCD_PORT")" -ge 1 ] && break
  sleep 0.1
done
check "interval 1s, timeout 1s: a connection that stops answering pings is closed by both" "1 1" \
  "$(closed "$PORT") $(closed "$ETCD_PORT")"
kill -CONT "${WATCHERS[@]}"; kill "${WATCHERS[@]}" 2>/dev/null; wait "${WATCHERS[@]}" 2>/dev/null
e2e_stop_server; e2e_stop_etcd

OUT=$("$LEASEHOLD_BIN" --data-dir "$E2E_DIR/z" --grpc-keepalive-interval forever 2>&1); RC=$?
check "a keepalive interval that is not a duration is refused at start (exit 2, as etcd's)" 2 "$RC"
check_match "naming the flag" 'grpc-keepalive-interval' "$OUT"
e2e_finish
