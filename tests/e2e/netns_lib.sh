# Three members, each in its own network namespace on a bridge, for tests that cut or stall links.
# Source it after lib.sh. netns_setup makes the namespaces (or exits 77, skipped, where they cannot be
# made); netns_start_members starts a member in each; netns_cleanup (run on exit) removes all of it.
# Sets TAG, NET (the bridge's /24: member i is $NET.i, client port 2379, peer port 2380), BRIDGE and
# MEMBER_PID[i].
TAG="ns$((RANDOM % 9000 + 1000))"; NET="10.213.$((RANDOM % 250 + 1))"
BRIDGE="${TAG}b"
declare -a MEMBER_PID
netns_cleanup() {
  for i in 1 2 3; do [ -n "${MEMBER_PID[$i]:-}" ] && kill -9 "${MEMBER_PID[$i]}" 2>/dev/null; done
  wait 2>/dev/null
  for i in 1 2 3; do ip netns del "$TAG-$i" 2>/dev/null; done
  ip link del "$BRIDGE" 2>/dev/null
  rm -rf "$E2E_DIR"
}
trap netns_cleanup EXIT

netns_setup() {
  if ! { ip link add "$BRIDGE" type bridge && ip link set "$BRIDGE" up && ip addr add "$NET.254/24" dev "$BRIDGE"; } 2>/dev/null; then
    echo "network namespaces are not available here: skipped"; exit 77
  fi
  for i in 1 2 3; do
    ip netns add "$TAG-$i"
    ip link add "${TAG}v$i" type veth peer name eth0 netns "$TAG-$i"
    ip link set "${TAG}v$i" master "$BRIDGE" up
    ip netns exec "$TAG-$i" ip addr add "$NET.$i/24" dev eth0
    ip netns exec "$TAG-$i" ip link set eth0 up
    ip netns exec "$TAG-$i" ip link set lo up
  done
}

# netns_start_member BINARY I: an etcd-compatible server (Leasehold, or etcd itself) in namespace I,
# listening for clients on $NET.I:2379 and on the namespace's own 127.0.0.1:2379, its data in
# $E2E_DIR/mI (a restart keeps it). netns_start_members BINARY starts all three.
netns_start_member() {
  local bin=$1 i=$2 initial="m1=http://$NET.1:2380,m2=http://$NET.2:2380,m3=http://$NET.3:2380"
  ip netns exec "$TAG-$i" "$bin" --name "m$i" --data-dir "$E2E_DIR/m$i" \
    --listen-client-urls "http://$NET.$i:2379,http://127.0.0.1:2379" --advertise-client-urls "http://$NET.$i:2379" \
    --listen-peer-urls "http://$NET.$i:2380" --initial-advertise-peer-urls "http://$NET.$i:2380" \
    --initial-cluster "$initial" --initial-cluster-token "$TAG" >>"$E2E_DIR/m$i.log" 2>&1 &
  MEMBER_PID[$i]=$!
}
netns_start_members() { for i in 1 2 3; do netns_start_member "$1" "$i"; done; }

# etcdctl against member i from outside its namespace.
at() { local i=$1; shift; timeout 20 etcdctl --endpoints="$NET.$i:2379" --dial-timeout=2s --command-timeout=3s "$@"; }
# The member among those given that says it leads, if any.
leader_among() { for i in "$@"; do at "$i" endpoint status 2>/dev/null | grep -q ", true, " && { echo "$i"; return; }; done; }
