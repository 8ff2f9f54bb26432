#!/usr/bin/env bash
# The JSON gateway and HTTP endpoints on the client port, with curl, next to etcdctl's gRPC on the
# same port: KV, Txn, Lease and Watch calls in protobuf's JSON mapping (base64 keys, int64 as
# strings), etcd's error bodies and statuses, /version, /health and /metrics; --cors and
# --host-whitelist (beside etcd 3.4).
source "$(dirname "$0")/lib.sh"
e2e_plan 52

e2e_start_server
URL="http://$EP"
post() { # path json -> sets BODY and CODE
  local out
  out=$(curl -sS -m 10 -w '\n%{http_code}' -X POST -d "$2" "$URL$1")
  BODY=$(head -n -1 <<<"$out"); CODE=$(tail -n 1 <<<"$out")
}
field() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))" "$BODY" "$1"; }

post /v3/kv/put '{"key":"Zm9v","value":"YmFy"}'
check "put answers 200" 200 "$CODE"
check_match "with etcd's header, 64-bit integers as strings" '"revision":"2"' "$BODY"
check "etcdctl on the same port sees the gateway's write" "$(printf 'foo\nbar')" "$(ctl get foo)"
ctl put foo2 baz >/dev/null
post /v3/kv/range '{"key":"Zm9v","range_end":"Zm9w"}'
check "range with range_end (snake_case) finds both keys" "2" "$(field 'd["count"]')"
check "values are base64" "YmF6" "$(field 'd["kvs"][1]["value"]')"
post /v3/kv/range '{"key":"Zm9v","rangeEnd":"Zm9w","keysOnly":true}'
check "lowerCamelCase names are accepted too" "False" "$(field '"value" in d["kvs"][0]')"
post /v3/kv/txn '{"compare":[{"target":"VALUE","key":"Zm9v","value":"YmFy"}],"success":[{"request_put":{"key":"Zm9v","value":"cXV4"}}],"failure":[{"request_range":{"key":"Zm9v"}}]}'
check "txn takes its success branch" "True" "$(field 'd["succeeded"]')"
post /v3/kv/deleterange '{"key":"Zm9vMg=="}'
check "deleterange deletes" "1" "$(field 'd["deleted"]')"

post /v3/lease/grant '{"TTL":60}'
LEASE_DEC=$(field 'd["ID"]')
check "lease grant answers its TTL" "60" "$(field 'd["TTL"]')"
post /v3/kv/put "{\"key\":\"bGVhc2Vk\",\"value\":\"eA==\",\"lease\":\"$LEASE_DEC\"}"
check "put with the lease" 200 "$CODE"
post /v3/lease/timetolive "{\"ID\":\"$LEASE_DEC\",\"keys\":true}"
check "timetolive lists the lease's key" "bGVhc2Vk" "$(field 'd["keys"][0]')"
post /v3/lease/leases '{}'
check "leases lists it" "$LEASE_DEC" "$(field 'd["leases"][0]["ID"]')"
post /v3/kv/lease/leases '{}'
check "and so does the older /v3/kv/lease/ path" "$LEASE_DEC" "$(field 'd["leases"][0]["ID"]')"
# Keep-alive: one renewal in, its answer out as a {"result":...} line, then the stream ends.
KEEP=$(curl -sS -N -m 5 -X POST -d "{\"ID\":\"$LEASE_DEC\"}" "$URL/v3/lease/keepalive")
check "keepalive renews the lease and ends" "$LEASE_DEC 60" "$(python3 -c 'import json,sys; r=json.loads(sys.argv[1])["result"]; print(r["ID"], r["TTL"])' "$KEEP")"
KEEP=$(curl -sS -N -m 5 -X POST -d '{"ID":"12345"}' "$URL/v3/lease/keepalive")
check "keepalive of a missing lease answers TTL 0" "12345 0" "$(python3 -c 'import json,sys; r=json.loads(sys.argv[1])["result"]; print(r["ID"], r.get("TTL","0"))' "$KEEP")"
post /v3/lease/revoke "{\"ID\":\"$LEASE_DEC\"}"
check "revoke answers 200" 200 "$CODE"
check "and the leased key is gone" "" "$(ctl get leased)"

post /v3/kv/put '{"value":"YmFy"}'
check "an empty key is etcd's 400" "400 etcdserver: key is not provided 3" "$CODE $(field 'd["error"]') $(field 'd["code"]')"
post /v3/lease/revoke '{"ID":"12345"}'
check "an unknown lease is etcd's 404" "404 etcdserver: requested lease not found" "$CODE $(field 'd["message"]')"
post /v3/kv/range '{"key": '
check "malformed JSON is 400" 400 "$CODE"
post /v3/kv/range '{"key":"Zm9v","a_field_of_a_later_etcd":1}'
check "an unknown field is skipped, as etcd skips it" '200 Zm9v' "$CODE $(field 'd["kvs"][0]["key"]')"
post /v3/kv/range '{"nokey":"x"}'
check "so a range of nothing but one is etcd's empty key" "400 etcdserver: key is not provided" "$CODE $(field 'd["error"]')"
post /v3/nothing/here '{}'
check "an unknown call is etcd's plain 404" "404 Not Found" "$CODE $BODY"
check "a GET of a call is etcd's plain 405" "405 Method Not Allowed" \
  "$(curl -sS -m 10 -o "$E2E_DIR/body" -w '%{http_code}' "$URL/v3/kv/range") $(cat "$E2E_DIR/body")"
post /v3/maintenance/hash '{}'
check_match "maintenance/hash is Hash, as on etcd" '^200 [0-9]+$' "$CODE $(field 'd["hash"]')"
# etcd's default --cors "*": any page may call the gateway; preflights are answered.
check "CORS headers on answers" "Access-Control-Allow-Origin: *" \
  "$(curl -sS -m 10 -D - -o /dev/null -X POST -d '{"key":"Zm9v"}' "$URL/v3/kv/range" | tr -d '\r' | grep -i '^access-control-allow-origin')"
check "an OPTIONS preflight is 200" 200 "$(curl -sS -m 10 -o /dev/null -w '%{http_code}' -X OPTIONS "$URL/v3/kv/put")"
# --cors naming origins: only those get the headers (their own origin echoed), as etcd's.
e2e_stop_server
e2e_start_server --cors "https://app.example,https://ops.example"
cors_origin() { curl -sS -m 10 -D - -o /dev/null -H "Origin: $1" -X POST -d '{"key":"Zm9v"}' "$URL/v3/kv/range" |
  tr -d '\r' | grep -i '^access-control-allow-origin'; }
check "--cors: a listed origin is echoed" "Access-Control-Allow-Origin: https://ops.example" "$(cors_origin https://ops.example)"
check "another origin gets no CORS headers" "" "$(cors_origin https://evil.example)"
# --host-whitelist, beside etcd 3.4: HTTP naming another Host is refused with etcd's 421 and its
# words (a DNS-rebinding defence), a listed one (with or without a port) is served, and gRPC on the
# same port is not concerned.
e2e_stop_server
e2e_start_server --host-whitelist "example.com,localhost"
e2e_start_etcd --host-whitelist "example.com,localhost"
as_host() { # url host -> status and body, as curl sees them
  curl -sS -m 10 -H "Host: $2" -w '\n%{http_code} %{content_type}' "$1/health"
}
for host in evil.com "[::1]:2379" example.com:2379 localhost; do
  check "--host-whitelist: Host $host answered as etcd answers it" "$(as_host "http://127.0.0.1:$ETCD_PORT" "$host")" \
    "$(as_host "$URL" "$host")"
done
check_match "the refusal is etcd's 421" '^421 text/plain' "$(as_host "$URL" evil.com | tail -1)"
check_match "and logged as etcd logs it" 'rejecting HTTP request to prevent DNS rebinding attacks","host":"evil.com"' "$(cat "$E2E_DIR/server.log")"
check "gRPC on the same port is not concerned" OK "$(ctl put hw v)"
answer() { curl -sS -m 10 -H "Host: localhost" -o /dev/null -w '%{http_code} %{content_type}' "$@"; }
for url in "http://127.0.0.1:$ETCD_PORT" "$URL"; do
  ANSWERS+=("$(answer "$url/metrics"), $(answer -X POST "$url/health"), $(curl -sS -m 10 -H "Host: localhost" -X POST "$url/health")")
done
check "/metrics' type and a POSTed /health's answer are etcd's" "${ANSWERS[0]}" "${ANSWERS[1]}"
# etcd's per-method gRPC counters: the same calls count the same on both, failures by their code,
# and methods never called are there at zero.
etcdctl --endpoints="127.0.0.1:$ETCD_PORT" put hw v >/dev/null  # as Leasehold had above
for port in "$ETCD_PORT" "$PORT"; do
  etcdctl --endpoints="127.0.0.1:$port" put m1 v >/dev/null; etcdctl --endpoints="127.0.0.1:$port" put m2 v >/dev/null
  etcdctl --endpoints="127.0.0.1:$port" get m1 --rev=999 >/dev/null 2>&1
  COUNTED+=("$(curl -sS -m 5 -H "Host: localhost" "http://127.0.0.1:$port/metrics" |
    grep -E '^grpc_server_[a-z_]+\{((grpc_code="OK",)?grpc_method="(Put|Compact)"|grpc_code="OutOfRange",grpc_method="Range")' | sort)")
done
check "grpc_server_* counts Put, Range's OutOfRange and an idle Compact as etcd's do" "${COUNTED[0]}" "${COUNTED[1]}"
check_match "(which are there)" 'grpc_server_handled_total\{grpc_code="OK",grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"\} [1-9]' "${COUNTED[1]}"
e2e_stop_etcd
e2e_stop_server
e2e_start_server --cors "https://app.example,https://ops.example" --metrics extensive
ctl put timed v >/dev/null
check_match "--metrics extensive: calls' handling times by method" \
  'grpc_server_handling_seconds_count\{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"\} 1' \
  "$(curl -sS -m 5 "$URL/metrics")"
# A value under --max-request-bytes fits, although its base64 in the body does not (as on etcd).
{ printf '{"key":"Ymln","value":"'; head -c 1300000 /dev/zero | base64 -w0; printf '"}'; } >"$E2E_DIR/big.json"
CODE=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' -X POST --data-binary @"$E2E_DIR/big.json" "$URL/v3/kv/put")
check "a 1.3 MB value, 1.7 MB in base64, is put" 200 "$CODE"
check "and read back whole" 1300000 "$(ctl get big --print-value-only | head -c 2000000 | wc -c | awk '{print $1 - 1}')"
{ printf '{"key":"'; head -c 3000000 /dev/zero | tr '\0' 'a'; printf '"}'; } >"$E2E_DIR/huge.json"
CODE=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' -X POST --data-binary @"$E2E_DIR/huge.json" "$URL/v3/kv/put")
check "a body no request under the limits could need is refused" 413 "$CODE"

# Watch: a chunked answer, one JSON object per line.
curl -sS -N -m 4 -X POST -d '{"create_request":{"key":"dw==","prev_kv":true}}' "$URL/v3/watch" >"$E2E_DIR/watch.out" 2>/dev/null &
WATCH=$!
sleep 0.5
ctl put w 1 >/dev/null; ctl put w 2 >/dev/null; ctl del w >/dev/null
wait $WATCH
LINES=$(python3 -c '
import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r.get("created"): print("created")
    for e in r.get("events", []): print(e.get("type","PUT"), e["kv"].get("value",""), e.get("prev_kv",{}).get("value",""))
' "$E2E_DIR/watch.out" | tr '\n' ',')
check "watch streams created, then each event with prev_kv" "created,PUT MQ== ,PUT Mg== MQ==,DELETE  Mg==," "$LINES"
# Several requests in one body are sent in order, as etcd's gateway sends them.
curl -sS -N -m 3 -X POST "$URL/v3/watch" -d '{"create_request":{"key":"dTE="}} {"create_request":{"key":"dTI=","watch_id":7}}
{"progress_request":{}}' >"$E2E_DIR/watch2.out" 2>/dev/null &
WATCH=$!
sleep 0.5
ctl put u2 1 >/dev/null; ctl put u1 1 >/dev/null
wait $WATCH
LINES=$(python3 -c '
import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    print(r.get("watch_id", "0"), "created" if r.get("created") else "", *[e["kv"]["key"] for e in r.get("events", [])])
' "$E2E_DIR/watch2.out" | tr '\n' ',')
check "a body of three requests: two watches and a progress request" "0 created,7 created,-1 ,7  dTI=,0  dTE=," "$LINES"
WATCHERS=()
for _ in $(seq 1 50); do
  curl -sS -N -m 0.3 -X POST -d '{"create_request":{"key":"eA=="}}' "$URL/v3/watch" >/dev/null 2>&1 &
  WATCHERS+=($!)
done
wait "${WATCHERS[@]}"
check "after 50 watchers hung up the server still answers" OK "$(ctl put after-watchers ok)"

# Election observe: the leader now, then each change, one line each.
post /v3/lease/grant '{"TTL":60}'
EL_LEASE=$(field 'd["ID"]')
post /v3/election/campaign "{\"name\":\"ZWw=\",\"value\":\"djE=\",\"lease\":\"$EL_LEASE\"}"
EL_LEADER=$(field 'json.dumps(d["leader"])')
curl -sS -N -m 3 -X POST -d '{"name":"ZWw="}' "$URL/v3/election/observe" >"$E2E_DIR/observe.out" 2>/dev/null &
OBSERVE=$!
sleep 0.5
post /v3/election/proclaim "{\"leader\":$EL_LEADER,\"value\":\"djI=\"}"
wait $OBSERVE
check "observe streams the leader's value, then the proclaimed one" "djE=,djI=," \
  "$(python3 -c 'import json,sys; [print(json.loads(l)["result"]["kv"]["value"]) for l in open(sys.argv[1])]' "$E2E_DIR/observe.out" | tr '\n' ',')"

check "/version on the client port" '{"etcdserver":"3.4.23","etcdcluster":"3.4.0"}' "$(curl -sS -m 5 "$URL/version")"
check "/health on the client port" '{"health":"true"}' "$(curl -sS -m 5 "$URL/health")"
check_match "/metrics on the client port" "etcd_server_has_leader 1" "$(curl -sS -m 5 "$URL/metrics")"
check_match "with etcd's version gauge" 'etcd_server_version\{server_version="3.4.23"\} 1' "$(curl -sS -m 5 "$URL/metrics")"
check "anything else is 404" 404 "$(curl -sS -m 5 -o /dev/null -w '%{http_code}' "$URL/v2/keys")"
e2e_finish
