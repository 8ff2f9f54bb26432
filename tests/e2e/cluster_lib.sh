# Helpers for multi-member end-to-end tests: a cluster of real leasehold processes on free loopback
# ports, each member with its own data dir and log. Source after lib.sh; call cluster_start N.
CLUSTER_N=0
declare -a CPORT PPORT CPID
cluster_stop_all() { for i in $(seq 1 "$CLUSTER_N"); do member_stop "$i" KILL; done; }
trap 'cluster_stop_all; e2e_stop_server; rm -rf "$E2E_DIR"' EXIT

cluster_flags() { # i
  local initial=""
  for j in $(seq 1 "$CLUSTER_N"); do initial+="${initial:+,}m$j=http://127.0.0.1:${PPORT[$j]}"; done
  echo --name "m$1" --data-dir "$E2E_DIR/m$1" \
    --listen-client-urls "http://127.0.0.1:${CPORT[$1]}" --advertise-client-urls "http://127.0.0.1:${CPORT[$1]}" \
    --listen-peer-urls "http://127.0.0.1:${PPORT[$1]}" --initial-advertise-peer-urls "http://127.0.0.1:${PPORT[$1]}" \
    --initial-cluster "$initial" --initial-cluster-token "e2e-$$" \
    --listen-metrics-urls "http://127.0.0.1:${MPORT[$1]:-$(free_port)}"
}

member_start() { # i [extra flags]
  local i=$1; shift
  # shellcheck disable=SC2046
  "$LEASEHOLD_BIN" $(cluster_flags "$i") "$@" >>"$E2E_DIR/m$i.log" 2>&1 &
  CPID[$i]=$!
}

member_stop() { # i [signal]
  [ -n "${CPID[$1]:-}" ] || return 0
  kill "-${2:-TERM}" "${CPID[$1]}" 2>/dev/null
  wait "${CPID[$1]}" 2>/dev/null
  CPID[$1]=""
}

ep() { echo "127.0.0.1:${CPORT[$1]}"; }
all_eps() { local out=""; for i in $(seq 1 "$CLUSTER_N"); do out+="${out:+,}$(ep "$i")"; done; echo "$out"; }
ctl_at() { local i=$1; shift; timeout 20 etcdctl --endpoints="$(ep "$i")" --dial-timeout=2s --command-timeout=5s "$@"; }

# Index of the member that says it leads (empty if none does within ~10 s).
leader_index() {
  for _ in $(seq 1 100); do
    for i in $(seq 1 "$CLUSTER_N"); do
      [ -n "${CPID[$i]:-}" ] || continue
      if ctl_at "$i" endpoint status 2>/dev/null | grep -q ", true, "; then echo "$i"; return 0; fi
    done
    sleep 0.1
  done
}

cluster_start() { # n
  cluster_launch "$1"
  cluster_await
}

# cluster_start in two steps: launch the founding members, then wait until they lead and serve.
cluster_launch() { # n
  CLUSTER_N=$1
  for i in $(seq 1 "$CLUSTER_N"); do CPORT[$i]=$(free_port); PPORT[$i]=$(free_port); MPORT[$i]=$(free_port); done
  for i in $(seq 1 "$CLUSTER_N"); do member_start "$i"; done
}

cluster_await() {
  if [ -z "$(leader_index)" ]; then
    echo "cluster elected no leader; logs:"; tail -n 20 "$E2E_DIR"/m*.log; exit 1
  fi
  # A leader needs only a majority: make sure every member serves, or say which did not and why.
  for i in $(seq 1 "$CLUSTER_N"); do
    for _ in $(seq 1 50); do ctl_at "$i" endpoint status >/dev/null 2>&1 && continue 2; sleep 0.2; done
    echo "member $i does not serve ($(kill -0 "${CPID[$i]}" 2>/dev/null && echo running || echo exited)); its log:"
    tail -n 20 "$E2E_DIR/m$i.log"; exit 1
  done
}
