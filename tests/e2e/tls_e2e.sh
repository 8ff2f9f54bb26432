#!/usr/bin/env bash
# TLS end to end with a throw-away CA: etcdctl over https with --cacert/--cert/--key, and curl
# (/health, /version, the JSON gateway) on the same https client URL; clients
# without a trusted certificate refused under --client-cert-auth, and with auth on, the certificate's
# common name taken as the user of a call without a token; members talking over https peer
# URLs with --peer-client-cert-auth, and a member whose certificate names another than
# --peer-cert-allowed-cn kept out; etcd's --client-crl-file, --client-cert-allowed-hostname and
# --cipher-suites, beside etcd 3.4 configured alike; the blob adapter and /metrics on https URLs (the Azure SDK for Python over TLS); etcd's --auto-tls
# and --peer-auto-tls, members making their own certificates.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cluster_lib.sh"
e2e_plan 90

PKI="$E2E_DIR/pki"
mkdir -p "$PKI"
ca() { # name
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" \
    -keyout "$PKI/$1.key" -out "$PKI/$1.crt" 2>/dev/null
}
cert() { # name ca [subject-alt-names]
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$PKI/$1.key" -out "$PKI/$1.csr" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "${3:-IP:127.0.0.1,DNS:localhost}" >"$PKI/$1.ext"
  openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/$2.crt" -CAkey "$PKI/$2.key" -CAcreateserial -days 2 \
    -extfile "$PKI/$1.ext" -out "$PKI/$1.crt" 2>/dev/null
}
ca ca; ca rogue-ca
cert server ca; cert client ca; cert peer ca; cert intruder rogue-ca
cert revoked ca; cert elsewhere ca DNS:elsewhere.example; cert impostor ca
# A revocation list from the CA (openssl ca keeps its record in index.txt): revoke NAME...
: >"$PKI/index.txt"
printf '[ca]\ndefault_ca=e2e\n[e2e]\ndatabase=%s\ndefault_md=sha256\ndefault_crl_days=2\ncertificate=%s\nprivate_key=%s\n' \
  "$PKI/index.txt" "$PKI/ca.crt" "$PKI/ca.key" >"$PKI/ca.cnf"
revoke() {
  for name in "$@"; do openssl ca -config "$PKI/ca.cnf" -revoke "$PKI/$name.crt" >/dev/null 2>&1 || fail "revoke $name"; done
  openssl ca -config "$PKI/ca.cnf" -gencrl -out "$PKI/ca.crl" >/dev/null 2>&1 || fail "make the revocation list"
}
revoke revoked

# --- Client TLS on a single member. ---
METRICS_PORT=$(free_port)
"$LEASEHOLD_BIN" --name tls --data-dir "$E2E_DIR/data" --listen-client-urls "https://$EP" \
  --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
  --listen-metrics-urls "https://127.0.0.1:$METRICS_PORT" \
  --cert-file "$PKI/server.crt" --key-file "$PKI/server.key" --auto-tls \
  --trusted-ca-file "$PKI/ca.crt" --client-cert-auth >>"$E2E_DIR/server.log" 2>&1 &
SERVER_PID=$!
tls_ctl() { timeout 20 etcdctl --endpoints="https://$EP" --dial-timeout=2s --command-timeout=5s "$@"; }
AUTH=(--cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key")
for _ in $(seq 1 100); do tls_ctl "${AUTH[@]}" endpoint status >/dev/null 2>&1 && break; sleep 0.1; done
check "put over TLS with a trusted client certificate" OK "$(tls_ctl "${AUTH[@]}" put k v 2>&1)"
check "get over TLS" "$(printf 'k\nv')" "$(tls_ctl "${AUTH[@]}" get k 2>&1)"
OUT=$(tls_ctl --cacert "$PKI/ca.crt" get k 2>&1); RC=$?
check "a client without a certificate is refused" 1 "$RC"
OUT=$(tls_ctl --cacert "$PKI/ca.crt" --cert "$PKI/intruder.crt" --key "$PKI/intruder.key" get k 2>&1); RC=$?
check "a client whose certificate another CA signed is refused" 1 "$RC"
OUT=$(timeout 20 etcdctl --endpoints="$EP" --dial-timeout=2s --command-timeout=3s get k 2>&1); RC=$?
check "a plaintext client is refused" 1 "$RC"
OUT=$(tls_ctl --cacert "$PKI/rogue-ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" get k 2>&1); RC=$?
check "a client that does not trust the server's CA gives up" 1 "$RC"
check_match "--auto-tls with certificates given warns, as etcd does" "ignoring client auto TLS since certs given" \
  "$(cat "$E2E_DIR/server.log")"
check "the server still serves trusted clients" "$(printf 'k\nv')" "$(tls_ctl "${AUTH[@]}" get k 2>&1)"
METRICS="https://127.0.0.1:$METRICS_PORT/health"
check "/health over https with a trusted client certificate" '{"health":"true"}' \
  "$(curl -s --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" "$METRICS")"
curl -s --cacert "$PKI/ca.crt" "$METRICS" >/dev/null 2>&1; RC=$?
if [ "$RC" -ne 0 ]; then pass "/health refuses a client without a certificate (curl exit $RC)"; else fail "/health answered a client without a certificate"; fi
# The client URL serves HTTP/1.1 over TLS too, as etcd's does: a ClientHello offering only HTTP/2
# (gRPC's) is relayed to gRPC, everyone else's is answered here.
CLIENT_URL="https://$EP"
CURL=(curl -s --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key")
check "/health on the https client URL (curl offers h2 and http/1.1)" '{"health":"true"}' "$("${CURL[@]}" "$CLIENT_URL/health")"
check_match "/version there with --http1.1" '"etcdserver":"3.4.23"' "$("${CURL[@]}" --http1.1 "$CLIENT_URL/version")"
check_match "the JSON gateway there: a put" '"revision":"' \
  "$("${CURL[@]}" "$CLIENT_URL/v3/kv/put" -X POST -d '{"key":"Z3c=","value":"b3Zlci10bHM="}')"
check_match "and a range sees it" '"value":"b3Zlci10bHM="' "$("${CURL[@]}" "$CLIENT_URL/v3/kv/range" -X POST -d '{"key":"Z3c="}')"
check "and etcdctl (gRPC through the relay) sees the gateway's write" "$(printf 'gw\nover-tls')" "$(tls_ctl "${AUTH[@]}" get gw 2>&1)"
curl -s --cacert "$PKI/ca.crt" "$CLIENT_URL/health" >/dev/null 2>&1; RC=$?
if [ "$RC" -ne 0 ]; then pass "HTTP on the client URL refuses a client without a certificate (curl exit $RC)"; else fail "the client URL answered HTTP without a certificate"; fi
curl -s "http://$EP/health" >/dev/null 2>&1; RC=$?
if [ "$RC" -ne 0 ]; then pass "plain HTTP to the https client URL gets no answer (curl exit $RC)"; else fail "the https client URL answered plain HTTP"; fi
# etcd's TLS common-name authentication: with auth on, a call without a token acts as the user its
# certificate names (CN=client here); another certificate's name (CN=server) is another user.
ROOT=(--user root:rootpw)
for step in "user add root:rootpw" "user grant-role root root" "user add client:clientpw" "role add c-keys" \
  "role grant-permission c-keys readwrite c/ --prefix" "user grant-role client c-keys" "auth enable"; do
  # shellcheck disable=SC2086
  tls_ctl "${AUTH[@]}" $step >/dev/null 2>&1 || fail "auth set-up: $step"
done
check "auth on: the certificate's common name is the user (client may write c/)" OK "$(tls_ctl "${AUTH[@]}" put c/1 v 2>&1)"
check "but not outside its role" "Error: etcdserver: permission denied" "$(tls_ctl "${AUTH[@]}" put other v 2>&1 | grep -v '"level"')"
check "a token still wins over the certificate" OK "$(tls_ctl "${AUTH[@]}" "${ROOT[@]}" put other v 2>&1)"
check "another certificate names another user (server has no role)" "Error: etcdserver: permission denied" \
  "$(tls_ctl --cacert "$PKI/ca.crt" --cert "$PKI/server.crt" --key "$PKI/server.key" get c/1 2>&1 | grep -v '"level"')"
tls_ctl "${AUTH[@]}" "${ROOT[@]}" auth disable >/dev/null 2>&1 || fail "auth disable"
e2e_stop_server

# --- etcd's rules for client certificates, side by side with etcd 3.4: --client-crl-file (read
# again for each connection) and --client-cert-allowed-hostname. ---
RULES=(--cert-file "$PKI/server.crt" --key-file "$PKI/server.key" --trusted-ca-file "$PKI/ca.crt" --client-cert-auth
  --client-crl-file "$PKI/ca.crl" --client-cert-allowed-hostname localhost)
LH_EP=127.0.0.1:$(free_port); REF_EP=127.0.0.1:$(free_port); REF_PEER=$(free_port); METRICS_PORT=$(free_port)
"$LEASEHOLD_BIN" --name rules --data-dir "$E2E_DIR/rules" --listen-client-urls "https://$LH_EP" \
  --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
  --listen-metrics-urls "https://127.0.0.1:$METRICS_PORT" "${RULES[@]}" >>"$E2E_DIR/rules.log" 2>&1 &
SERVER_PID=$!
etcd --name ref --data-dir "$E2E_DIR/etcd-rules" --listen-client-urls "https://$REF_EP" --advertise-client-urls "https://$REF_EP" \
  --listen-peer-urls "http://127.0.0.1:$REF_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$REF_PEER" \
  --initial-cluster "ref=http://127.0.0.1:$REF_PEER" "${RULES[@]}" >"$E2E_DIR/etcd-rules.log" 2>&1 &
ETCD_PID=$!
as() { # endpoint cert-name etcdctl-args...: exit status of etcdctl with that certificate
  local ep=$1 name=$2; shift 2
  timeout 20 etcdctl --endpoints="https://$ep" --dial-timeout=2s --command-timeout=5s --cacert "$PKI/ca.crt" \
    --cert "$PKI/$name.crt" --key "$PKI/$name.key" "$@" >/dev/null 2>&1
  echo $?
}
for ep in "$LH_EP" "$REF_EP"; do for _ in $(seq 1 100); do [ "$(as "$ep" client endpoint health)" = 0 ] && break; sleep 0.1; done; done
for ep in "$LH_EP" "$REF_EP"; do
  who=$([ "$ep" = "$LH_EP" ] && echo leasehold || echo "etcd 3.4")
  check "$who: a valid certificate for the allowed host name is served" 0 "$(as "$ep" client put rules v)"
  check "$who: a revoked certificate is refused" 1 "$(as "$ep" revoked get rules)"
  check "$who: a certificate for another host name is refused" 1 "$(as "$ep" elsewhere get rules)"
done
for ep in "$LH_EP" "$REF_EP"; do
  who=$([ "$ep" = "$LH_EP" ] && echo leasehold || echo "etcd 3.4")
  check "$who: /health on the https client URL with a valid certificate" '{"health":"true"}' \
    "$(curl -s --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" "https://$ep/health")"
  # (curl's exit status differs, 55 or 56, with when TLS 1.3 lets it see the refusal.)
  curl -s --cacert "$PKI/ca.crt" --cert "$PKI/revoked.crt" --key "$PKI/revoked.key" "https://$ep/health" >/dev/null 2>&1; RC=$?
  if [ "$RC" -ne 0 ]; then pass "$who: and a revoked one is refused (curl exit $RC)"; else fail "$who: /health answered a revoked certificate"; fi
done
SERIAL=$(openssl x509 -in "$PKI/revoked.crt" -noout -serial | cut -d= -f2 | tr 'A-F' 'a-f' | sed 's/^\(00\)*//')
check_match "the refusals are logged with etcd's reasons" \
  "rejected connection.*transport: certificate serial $SERIAL revoked.*rejected connection.*client certificate authentication failed" \
  "$(tr '\n' ' ' <"$E2E_DIR/rules.log")"
METRICS="https://127.0.0.1:$METRICS_PORT/health"
check "/metrics' port applies the rules too: a valid certificate" '{"health":"true"}' \
  "$(curl -s --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" "$METRICS")"
curl -s --cacert "$PKI/ca.crt" --cert "$PKI/revoked.crt" --key "$PKI/revoked.key" "$METRICS" >/dev/null 2>&1; RC=$?
if [ "$RC" -ne 0 ]; then pass "and a revoked one is refused (curl exit $RC)"; else fail "/health answered a revoked certificate"; fi
revoke client
for ep in "$LH_EP" "$REF_EP"; do
  who=$([ "$ep" = "$LH_EP" ] && echo leasehold || echo "etcd 3.4")
  check "$who: a certificate revoked by a newer list is refused without a restart" 1 "$(as "$ep" client get rules)"
done
e2e_stop_server; e2e_stop_etcd
# Refused starts get ports of their own too: they must fail for the reason checked, not on a port
# something else on the machine holds.
OWN_PORTS=(--listen-peer-urls "http://127.0.0.1:$(free_port)")
BOTH=(--peer-cert-allowed-cn peer --peer-cert-allowed-hostname localhost)
OUT=$("$LEASEHOLD_BIN" "${OWN_PORTS[@]}" --data-dir "$E2E_DIR/z" --listen-client-urls "http://127.0.0.1:$(free_port)" "${BOTH[@]}" 2>&1); RC=$?
check "an allowed common name and host name together are refused at start" 1 "$RC"
MESSAGE='AllowedCN and AllowedHostname are mutually exclusive \(cn=\\?"peer\\?", hostname=\\?"localhost\\?"\)'
check_match "with etcd's words" "$MESSAGE" "$OUT"
REF_OUT=$(timeout 20 etcd --data-dir "$E2E_DIR/etcd-z" --listen-client-urls "http://127.0.0.1:$(free_port)" \
  --advertise-client-urls "http://127.0.0.1:$(free_port)" --listen-peer-urls "https://127.0.0.1:$(free_port)" \
  --peer-cert-file "$PKI/peer.crt" --peer-key-file "$PKI/peer.key" "${BOTH[@]}" 2>&1)
check_match "(etcd 3.4's own)" "$MESSAGE" "$REF_OUT"
OUT=$("$LEASEHOLD_BIN" "${OWN_PORTS[@]}" --data-dir "$E2E_DIR/z" --listen-client-urls "http://127.0.0.1:$(free_port)" \
  --client-crl-file "$E2E_DIR/no-such.crl" 2>&1); RC=$?
check "an unreadable revocation list is refused at start" 1 "$RC"
check_match "naming it" "cannot read the certificate revocation list '$E2E_DIR/no-such.crl'" "$OUT"

# --- etcd's --cipher-suites, side by side with etcd 3.4: TLS 1.2 limited to the named suites on
# both paths of the https client URL (curl's HTTP/1.1 and an HTTP/2-only ClientHello, which goes to
# gRPC), TLS 1.3 untouched, as Go leaves it. ---
CIPHERS=(--cert-file "$PKI/server.crt" --key-file "$PKI/server.key" --cipher-suites TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
LH_EP=127.0.0.1:$(free_port); REF_EP=127.0.0.1:$(free_port); REF_PEER=$(free_port)
"$LEASEHOLD_BIN" --name ciphers --data-dir "$E2E_DIR/ciphers" --listen-client-urls "https://$LH_EP" \
  --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
  "${CIPHERS[@]}" >>"$E2E_DIR/ciphers.log" 2>&1 &
SERVER_PID=$!
etcd --name ref --data-dir "$E2E_DIR/etcd-ciphers" --listen-client-urls "https://$REF_EP" --advertise-client-urls "https://$REF_EP" \
  --listen-peer-urls "http://127.0.0.1:$REF_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$REF_PEER" \
  --initial-cluster "ref=http://127.0.0.1:$REF_PEER" "${CIPHERS[@]}" >"$E2E_DIR/etcd-ciphers.log" 2>&1 &
ETCD_PID=$!
for ep in "$LH_EP" "$REF_EP"; do for _ in $(seq 1 100); do curl -s --cacert "$PKI/ca.crt" "https://$ep/health" >/dev/null 2>&1 && break; sleep 0.1; done; done
# The cipher an HTTP/2-only TLS 1.2 client gets (ALPN h2, as gRPC's), "(NONE)" when refused.
h2_cipher() { echo | timeout 10 openssl s_client -connect "$1" -alpn h2 -tls1_2 -cipher "$2" 2>/dev/null | grep -a -o 'Cipher is .*' | head -1; }
for ep in "$LH_EP" "$REF_EP"; do
  who=$([ "$ep" = "$LH_EP" ] && echo leasehold || echo "etcd 3.4")
  check "$who: TLS 1.2 with the allowed suite" '{"health":"true"}' \
    "$(curl -s --cacert "$PKI/ca.crt" --tls-max 1.2 --ciphers ECDHE-RSA-AES128-GCM-SHA256 "https://$ep/health")"
  curl -s --cacert "$PKI/ca.crt" --tls-max 1.2 --ciphers ECDHE-RSA-AES256-GCM-SHA384 "https://$ep/health" >/dev/null 2>&1; RC=$?
  if [ "$RC" -ne 0 ]; then pass "$who: TLS 1.2 with another suite is refused (curl exit $RC)"; else fail "$who: answered TLS 1.2 with a suite not allowed"; fi
  check "$who: TLS 1.3 is untouched" '{"health":"true"}' "$(curl -s --cacert "$PKI/ca.crt" --tlsv1.3 "https://$ep/health")"
  check "$who: an HTTP/2-only client gets the allowed suite" "Cipher is ECDHE-RSA-AES128-GCM-SHA256" \
    "$(h2_cipher "$ep" ECDHE-RSA-AES128-GCM-SHA256)"
  check "$who: and not another" "Cipher is (NONE)" "$(h2_cipher "$ep" ECDHE-RSA-AES256-GCM-SHA384)"
done
check "and etcdctl is served over gRPC" OK "$(timeout 20 etcdctl --endpoints="https://$LH_EP" --cacert "$PKI/ca.crt" put c v 2>&1)"
e2e_stop_server; e2e_stop_etcd
OUT=$("$LEASEHOLD_BIN" "${OWN_PORTS[@]}" --data-dir "$E2E_DIR/z" --listen-client-urls "http://127.0.0.1:$(free_port)" --cipher-suites TLS_BOGUS 2>&1); RC=$?
check "an unknown cipher suite is refused at start" 1 "$RC"
check_match "with etcd's words" 'unexpected TLS cipher suite \\?"TLS_BOGUS\\?"' "$OUT"
OUT=$("$LEASEHOLD_BIN" "${OWN_PORTS[@]}" --data-dir "$E2E_DIR/z" --listen-client-urls "https://127.0.0.1:$(free_port)" "${CIPHERS[@]:0:4}" \
  --cipher-suites TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 2>&1); RC=$?
check "an https client URL without an ECDHE AES-128-GCM suite is refused, as etcd's HTTP/2 refuses it" 1 "$RC"
check_match "with Go's words" 'missing an HTTP/2-required AES_128_GCM_SHA256 cipher' "$OUT"

# --- The blob adapter and /metrics on https URLs (no client certificates asked). ---
BLOB_PORT=$(free_port); METRICS_PORT=$(free_port)
e2e_start_server --listen-blob-urls "https://127.0.0.1:$BLOB_PORT" --listen-metrics-urls "https://127.0.0.1:$METRICS_PORT" \
  --cert-file "$PKI/server.crt" --key-file "$PKI/server.key"
if REQUESTS_CA_BUNDLE="$PKI/ca.crt" /usr/bin/python3 "$(dirname "$0")/blob_python_smoke.py" \
  "https://127.0.0.1:$BLOB_PORT/devstoreaccount1" >"$E2E_DIR/blob_https.log" 2>&1; then
  pass "the Azure SDK for Python through acquire, renew, change, break and release over https"
else
  fail "the Azure SDK for Python over https" "$(tail -5 "$E2E_DIR/blob_https.log")"
fi
curl -s "http://127.0.0.1:$BLOB_PORT/devstoreaccount1?comp=list" >/dev/null 2>&1; RC=$?
if [ "$RC" -ne 0 ]; then pass "plain http to the https blob port gets no answer (curl exit $RC)"; else fail "the https blob port answered plain http"; fi
check "/metrics over https" "1" \
  "$(curl -s --cacert "$PKI/ca.crt" "https://127.0.0.1:$METRICS_PORT/metrics" | awk '$1=="etcd_server_has_leader"{print $2}')"
check "and the etcd API still on its plain client URL" OK "$(ctl put k2 v 2>&1)"
e2e_stop_server
OUT=$("$LEASEHOLD_BIN" --data-dir "$E2E_DIR/y" --listen-client-urls "http://127.0.0.1:$(free_port)" \
  --listen-peer-urls "http://127.0.0.1:$(free_port)" --listen-blob-urls "https://127.0.0.1:$(free_port)" 2>&1); RC=$?
check "an https blob URL without a certificate is refused at start" 1 "$RC"
check_match "naming the problem" "https needs --cert-file and --key-file" "$OUT"

OUT=$("$LEASEHOLD_BIN" "${OWN_PORTS[@]}" --data-dir "$E2E_DIR/x" --listen-client-urls "https://127.0.0.1:$(free_port)" 2>&1); RC=$?
check "https without a certificate is refused at start" 1 "$RC"
check_match "naming the problem" "no certificate and key were given" "$OUT"

# --- Peer TLS: three members on https peer URLs that require the common name "peer"
# (--peer-cert-allowed-cn); the third's certificate, though signed by the trusted CA, names another. ---
CLUSTER_N=3
for i in 1 2 3; do CPORT[$i]=$(free_port); PPORT[$i]=$(free_port); MPORT[$i]=$(free_port); done
INITIAL="m1=https://127.0.0.1:${PPORT[1]},m2=https://127.0.0.1:${PPORT[2]},m3=https://127.0.0.1:${PPORT[3]}"
peer_member() { # i cert-name
  "$LEASEHOLD_BIN" --name "m$1" --data-dir "$E2E_DIR/m$1" \
    --listen-client-urls "http://127.0.0.1:${CPORT[$1]}" --listen-peer-urls "https://127.0.0.1:${PPORT[$1]}" \
    --initial-advertise-peer-urls "https://127.0.0.1:${PPORT[$1]}" --initial-cluster "$INITIAL" \
    --initial-cluster-token "tls-$$" --peer-cert-file "$PKI/$2.crt" \
    --peer-key-file "$PKI/$2.key" --peer-trusted-ca-file "$PKI/ca.crt" --peer-client-cert-auth \
    --peer-cert-allowed-cn peer >>"$E2E_DIR/m$1.log" 2>&1 &
  CPID[$1]=$!
}
peer_member 1 peer; peer_member 2 peer; peer_member 3 impostor
LEADER=$(leader_index)
check_match "members with trusted peer certificates elect a leader" '^[12]$' "$LEADER"
check "and replicate writes" OK "$(ctl_at "$LEADER" put over-peer-tls yes 2>&1)"
sleep 2
check "the member whose certificate names another received nothing" "" "$(ctl_at 3 get over-peer-tls --consistency=s 2>&1)"
check "its peers do not even send to it: it never hears of a leader (etcd checks the rules both ways)" 0 \
  "$(grep -c '"msg":"leader changed","leader":"[1-9a-f]' "$E2E_DIR/m3.log")"
check_match "and its peers logged why" "rejected connection.*client certificate authentication failed" "$(cat "$E2E_DIR/m$LEADER.log")"
check_match "the refused member logged etcd's line: its peers' dialers refused its certificate with a TLS alert" \
  '"msg":"rejected connection","port":"peer","remote-addr":"127.0.0.1:[0-9]+","server-name":"","error":"remote error: tls: bad certificate"' \
  "$(cat "$E2E_DIR/m3.log")"
check_match "while it logged that it cannot reach them" '"msg":"peer became inactive \(message send to peer failed\)"' \
  "$(cat "$E2E_DIR/m3.log")"
OTHER=$((3 - LEADER))
check "the other trusted member has the write" "$(printf 'over-peer-tls\nyes')" "$(ctl_at "$OTHER" get over-peer-tls --consistency=s 2>&1)"
# etcd 3.4 configured alike: its refused member logs the same words.
cluster_stop_all
for i in 1 2 3; do PPORT[$i]=$(free_port); done
INITIAL="e1=https://127.0.0.1:${PPORT[1]},e2=https://127.0.0.1:${PPORT[2]},e3=https://127.0.0.1:${PPORT[3]}"
for i in 1 2 3; do
  certname=peer; [ "$i" = 3 ] && certname=impostor
  etcd --name "e$i" --data-dir "$E2E_DIR/etcd-peer$i" --listen-client-urls "http://127.0.0.1:$(free_port)" \
    --advertise-client-urls "http://127.0.0.1:$(free_port)" --listen-peer-urls "https://127.0.0.1:${PPORT[$i]}" \
    --initial-advertise-peer-urls "https://127.0.0.1:${PPORT[$i]}" --initial-cluster "$INITIAL" \
    --initial-cluster-token "etcd-tls-$$" --peer-cert-file "$PKI/$certname.crt" --peer-key-file "$PKI/$certname.key" \
    --peer-trusted-ca-file "$PKI/ca.crt" --peer-client-cert-auth --peer-cert-allowed-cn peer \
    >>"$E2E_DIR/etcd-peer$i.log" 2>&1 &
  CPID[$i]=$!
done
for _ in $(seq 1 100); do grep -q "remote error: tls: bad certificate" "$E2E_DIR/etcd-peer3.log" && break; sleep 0.1; done
check_match "(etcd 3.4's refused member says the same)" 'rejected connection from "127.0.0.1:[0-9]+" \(error "remote error: tls: bad certificate"' \
  "$(cat "$E2E_DIR/etcd-peer3.log")"

# --- etcd's check of a peer's client certificate against the address it connects from: a member on
# 127.0.0.2 whose certificate names only 127.0.0.2 dials its peers from 127.0.0.1, so they refuse
# it, unless they run with --experimental-peer-skip-client-san-verification. ---
cluster_stop_all
cert far ca IP:127.0.0.2
HOST=(x 127.0.0.1 127.0.0.1 127.0.0.2)
san_cluster() { # run extra-flags-for-members-1-and-2...
  for i in 1 2 3; do CPORT[$i]=$(free_port); PPORT[$i]=$(free_port); done
  local initial="m1=https://${HOST[1]}:${PPORT[1]},m2=https://${HOST[2]}:${PPORT[2]},m3=https://${HOST[3]}:${PPORT[3]}"
  local run=$1; shift
  for i in 1 2 3; do
    local certname=peer extra=("$@")
    [ "$i" = 3 ] && certname=far extra=()
    "$LEASEHOLD_BIN" --name "m$i" --data-dir "$E2E_DIR/san$run-$i" \
      --listen-client-urls "http://127.0.0.1:${CPORT[$i]}" --listen-peer-urls "https://${HOST[$i]}:${PPORT[$i]}" \
      --initial-advertise-peer-urls "https://${HOST[$i]}:${PPORT[$i]}" --initial-cluster "$initial" \
      --initial-cluster-token "san$run-$$" --peer-cert-file "$PKI/$certname.crt" \
      --peer-key-file "$PKI/$certname.key" --peer-trusted-ca-file "$PKI/ca.crt" --peer-client-cert-auth \
      "${extra[@]}" >>"$E2E_DIR/san$run-$i.log" 2>&1 &
    CPID[$i]=$!
  done
}
san_cluster 1
LEADER=$(leader_index)
check_match "members 1 and 2 elect a leader" '^[12]$' "$LEADER"
check "and take writes" OK "$(ctl_at "$LEADER" put san yes 2>&1)"
for _ in $(seq 1 50); do grep -q 'x509: certificate is valid for 127.0.0.2, not 127.0.0.1' "$E2E_DIR"/san1-[12].log && break; sleep 0.1; done
check_match "a member whose certificate names another address is refused, in etcd's words" \
  '"msg":"rejected connection","port":"peer","remote-addr":"127.0.0.1:[0-9]+","server-name":"","error":"x509: certificate is valid for 127.0.0.2, not 127.0.0.1"' \
  "$(cat "$E2E_DIR"/san1-[12].log)"
cluster_stop_all
san_cluster 2 --experimental-peer-skip-client-san-verification
LEADER=$(leader_index)
check "with --experimental-peer-skip-client-san-verification it is let in" OK "$(ctl_at "$LEADER" put san yes 2>&1)"
for _ in $(seq 1 50); do [ -n "$(ctl_at 3 get san --consistency=s 2>/dev/null)" ] && break; sleep 0.1; done
check "it has the write" "$(printf 'san\nyes')" "$(ctl_at 3 get san --consistency=s 2>&1)"
check "and nobody was refused" 0 "$(cat "$E2E_DIR"/san2-[123].log | grep -c '"msg":"rejected connection"')"

# --- etcd's --peer-auto-tls and --auto-tls: members that made their own certificates. Traffic is
# encrypted, nobody is verified: peers trust each other's, clients must skip verification. ---
cluster_stop_all
for i in 1 2 3; do CPORT[$i]=$(free_port); PPORT[$i]=$(free_port); done
INITIAL="m1=https://127.0.0.1:${PPORT[1]},m2=https://127.0.0.1:${PPORT[2]},m3=https://127.0.0.1:${PPORT[3]}"
auto_member() { # i
  "$LEASEHOLD_BIN" --name "m$1" --data-dir "$E2E_DIR/auto$1" --listen-client-urls "https://127.0.0.1:${CPORT[$1]}" \
    --advertise-client-urls "https://127.0.0.1:${CPORT[$1]}" --listen-peer-urls "https://127.0.0.1:${PPORT[$1]}" \
    --initial-advertise-peer-urls "https://127.0.0.1:${PPORT[$1]}" --initial-cluster "$INITIAL" \
    --initial-cluster-token "auto-$$" --peer-auto-tls --auto-tls >>"$E2E_DIR/auto$1.log" 2>&1 &
  CPID[$1]=$!
}
auto_ctl() { # i etcdctl-args...
  local i=$1; shift
  timeout 20 etcdctl --endpoints="https://127.0.0.1:${CPORT[$i]}" --insecure-transport=false --insecure-skip-tls-verify \
    --dial-timeout=2s --command-timeout=5s "$@"
}
auto_leader() {
  for _ in $(seq 1 100); do
    for i in 1 2 3; do
      kill -0 "${CPID[$i]:-0}" 2>/dev/null && auto_ctl "$i" endpoint status 2>/dev/null | grep -q ", true, " && { echo "$i"; return; }
    done
    sleep 0.1
  done
}
for i in 1 2 3; do auto_member "$i"; done
check_match "members on self-signed peer certificates elect a leader" '^[123]$' "$(auto_leader)"
check "a put over a self-signed client port (etcdctl --insecure-transport=false --insecure-skip-tls-verify)" OK "$(auto_ctl 1 put auto yes 2>&1)"
for i in 2 3; do
  for _ in $(seq 1 50); do [ -n "$(auto_ctl "$i" get auto --consistency=s 2>/dev/null)" ] && break; sleep 0.1; done
  check "member $i has it, over self-signed peer TLS" "$(printf 'auto\nyes')" "$(auto_ctl "$i" get auto --consistency=s 2>&1)"
done
OUT=$(timeout 20 etcdctl --endpoints="https://127.0.0.1:${CPORT[1]}" --dial-timeout=2s --command-timeout=3s get auto 2>&1); RC=$?
check "a client that verifies the self-signed certificate gives up" 1 "$RC"
OUT=$(timeout 20 etcdctl --endpoints="127.0.0.1:${CPORT[1]}" --dial-timeout=2s --command-timeout=3s get auto 2>&1); RC=$?
check "a plaintext client is refused" 1 "$RC"
CERT="$E2E_DIR/auto1/fixtures/client/cert.pem"
check_match "the client certificate names the listen host" "IP Address:127.0.0.1" "$(openssl x509 -in "$CERT" -noout -text 2>&1)"
check_match "and the peer certificate too" "IP Address:127.0.0.1" \
  "$(openssl x509 -in "$E2E_DIR/auto1/fixtures/peer/cert.pem" -noout -text 2>&1)"
check "the keys are readable by their owner only" "600 600" \
  "$(stat -c %a "$E2E_DIR/auto1/fixtures/client/key.pem" "$E2E_DIR/auto1/fixtures/peer/key.pem" | tr '\n' ' ' | sed 's/ $//')"
FINGERPRINT=$(openssl x509 -in "$CERT" -noout -fingerprint 2>&1)
member_stop 1
auto_member 1
for _ in $(seq 1 100); do [ "$(auto_ctl 1 get auto --print-value-only 2>/dev/null)" = yes ] && break; sleep 0.1; done
check "a restarted member serves again" yes "$(auto_ctl 1 get auto --print-value-only 2>&1)"
check "with the certificate it made before" "$FINGERPRINT" "$(openssl x509 -in "$CERT" -noout -fingerprint 2>&1)"
e2e_finish
