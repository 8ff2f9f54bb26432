# Shared by the benchmark scripts (sourced, not run): starting Debian's etcd 3.4 or Leasehold as one
# member of a loopback cluster, with the same flags for both.

# launch_member etcd|leasehold NAME DATA_DIR CLIENT_PORT PEER_PORT INITIAL_CLUSTER LOG
# Starts the member in the background, its output appended to LOG; $! is its pid. A Leasehold member
# runs under $WRAP when set (a command prefix such as eatmydata).
launch_member() {
  local kind=$1 name=$2 dir=$3 cp=$4 pp=$5 initial=$6 log=$7
  if [ "$kind" = etcd ]; then
    etcd --name "$name" --data-dir "$dir" --listen-client-urls "http://127.0.0.1:$cp" \
      --advertise-client-urls "http://127.0.0.1:$cp" --listen-peer-urls "http://127.0.0.1:$pp" \
      --initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "$initial" \
      --log-level error >>"$log" 2>&1 &
  else
    ${WRAP:-} "$ROOT/build/server/leasehold" --name "$name" --data-dir "$dir" --listen-client-urls "http://127.0.0.1:$cp" \
      --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
      --initial-cluster "$initial" --log-level warn >>"$log" 2>&1 &
  fi
}

# is_leader ENDPOINT: whether the member serving ENDPOINT (host:port) says it leads.
# Until the port listens it answers no at once: an etcdctl refused there would sit out gRPC's 1 s
# reconnect backoff, which restart timings would count.
is_leader() {
  (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null || return 1
  ETCDCTL_API=3 etcdctl --endpoints="$1" --command-timeout=1s endpoint status 2>/dev/null |
    grep -q ", true, "
}
