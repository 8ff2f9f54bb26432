#!/usr/bin/env bash
# etcd's v3 auth end to end:
#  - auth_scenario.sh's etcdctl session gives the same output on Leasehold as on etcd 3.4;
#  - simple tokens: through the JSON gateway, a token works until --auth-token-ttl passes unused,
#    and is refused with "invalid auth token" (HTTP 401) afterwards;
#  - a wrong password is refused only after --auth-failure-delay;
#  - Lock acts with the caller's permissions;
#  - users, roles and the switch are replicated and survive a restart; a token issued by one
#    member works on another;
#  - JWT tokens (--auth-token jwt,...): the same etcdctl session prints the same as on etcd 3.4
#    configured alike; a token is a signed JWT naming its user, good across a restart, void after
#    its ttl or any auth change (etcd's "revision of auth store is old").
source "$(dirname "$0")/lib.sh"
e2e_plan 28
HERE=$(dirname "$0")

normalise() { sed -E '/"level":"warn"/d; s/[0-9a-f]{16}/ID/g; s/127\.0\.0\.1:[0-9]+/ENDPOINT/g'; }

# --- Leasehold against etcd 3.4, the same session ---
e2e_start_server --auth-token-ttl=6 --auth-failure-delay=300ms --bcrypt-cost=4
bash "$HERE/auth_scenario.sh" "$EP" 2>&1 | normalise >"$E2E_DIR/leasehold.out"
if command -v etcd >/dev/null; then
  e2e_start_etcd
  bash "$HERE/auth_scenario.sh" "127.0.0.1:$ETCD_PORT" 2>&1 | normalise >"$E2E_DIR/etcd.out"
  e2e_stop_etcd
  if diff "$E2E_DIR/etcd.out" "$E2E_DIR/leasehold.out" >"$E2E_DIR/diff"; then
    pass "etcdctl's auth session prints the same on Leasehold as on etcd 3.4 ($(wc -l <"$E2E_DIR/etcd.out") lines)"
  else
    fail "etcdctl's auth session differs from etcd 3.4's (< etcd, > leasehold)" "$(cat "$E2E_DIR/diff")"
  fi
else
  fail "etcd 3.4 (Debian's etcd-server) is needed as the reference"
fi

# --- Tokens through the JSON gateway ---
ctl user add root:rootpw >/dev/null 2>&1; ctl user grant-role root root >/dev/null  # root may exist already
ctl user add carol:cpw >/dev/null; ctl role add rc >/dev/null
ctl role grant-permission rc readwrite /c/ --prefix >/dev/null; ctl user grant-role carol rc >/dev/null
run_ctl auth enable
check "auth enable" "Authentication Enabled" "$OUT"
gw() { curl -s -w ' %{http_code}' -XPOST "http://$EP/v3/$1" "${@:3}" -d "$2"; }
token_of() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().rsplit(" ",1)[0])["token"])'; }
TOKEN=$(gw auth/authenticate '{"name":"carol","password":"cpw"}' | token_of)
check_match "authenticate gives an etcd simple token" '^[a-zA-Z]{16}\.[0-9]+$' "$TOKEN"
PUT='{"key":"L2MveA==","value":"dg=="}'  # /c/x = v
check_match "a put with the token succeeds" '"revision":"[0-9]+".* 200$' "$(gw kv/put "$PUT" -H "Authorization: $TOKEN")"
check_match "a put outside carol's prefix is denied" '"message":"etcdserver: permission denied","code":7} 403$' \
  "$(gw kv/put '{"key":"L2Q=","value":"dg=="}' -H "Authorization: $TOKEN")"
check_match "a put without a token is refused" 'etcdserver: user name is empty.* 400$' "$(gw kv/put "$PUT")"
# Margins of 2 s either side of the 6 s ttl: the test command runs two tests at once on 2 cores.
sleep 3; gw kv/range '{"key":"L2MveA=="}' -H "Authorization: $TOKEN" >/dev/null
sleep 4
check_match "each use extends the token's life" ' 200$' "$(gw kv/range '{"key":"L2MveA=="}' -H "Authorization: $TOKEN")"
sleep 8
check_match "a token unused for --auth-token-ttl is refused" '"message":"etcdserver: invalid auth token","code":16} 401$' \
  "$(gw kv/range '{"key":"L2MveA=="}' -H "Authorization: $TOKEN")"

START=$(date +%s%N)
OUTPUT=$(gw auth/authenticate '{"name":"carol","password":"guess"}')
ELAPSED_MS=$(( ($(date +%s%N) - START) / 1000000 ))
check_match "a wrong password is refused with etcd's error" 'authentication failed, invalid user ID or password.* 400$' "$OUTPUT"
if [ "$ELAPSED_MS" -ge 300 ]; then pass "a wrong password is answered after the delay (${ELAPSED_MS} ms)"; else fail "wrong password answered in ${ELAPSED_MS} ms, before the 300 ms delay"; fi
START=$(date +%s%N)
gw auth/authenticate '{"name":"nobody","password":"guess"}' >/dev/null
ELAPSED_MS=$(( ($(date +%s%N) - START) / 1000000 ))
if [ "$ELAPSED_MS" -ge 300 ]; then pass "so is an unknown user (${ELAPSED_MS} ms)"; else fail "unknown user answered in ${ELAPSED_MS} ms"; fi

# --- Lock acts as its caller ---
run_ctl --user carol:cpw lock /c/lock echo held
check "carol locks under her prefix" "held" "$OUT"
run_ctl --user carol:cpw lock /elsewhere echo held
check "but not elsewhere" "Error: etcdserver: permission denied" "$ERR"

# --- Replicated: a restart keeps users, roles and the switch ---
e2e_stop_server
e2e_start_server --auth-token-ttl=2
run_ctl get /c/x
check "after a restart auth is still enabled" "Error: etcdserver: user name is empty" "$ERR"
run_ctl --user carol:cpw get /c/x --print-value-only
check "and carol still reads her key" "v" "$OUT"
e2e_stop_server

# --- A token issued by one member works on another ---
source "$HERE/cluster_lib.sh"
cluster_start 3
ctl_at 1 user add root:rootpw >/dev/null; ctl_at 1 user grant-role root root >/dev/null
ctl_at 1 auth enable >/dev/null
TOKEN=$(curl -s -XPOST "http://$(ep 1)/v3/auth/authenticate" -d '{"name":"root","password":"rootpw"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
sleep 0.5  # the grant is applied on every member by now
check_match "a token from member 1 is accepted by member 3" ' 200$' \
  "$(curl -s -w ' %{http_code}' -XPOST "http://$(ep 3)/v3/kv/put" -H "Authorization: $TOKEN" -d "$PUT")"
check "and member 2 enforces auth too" "Error: etcdserver: user name is empty" "$(ctl_at 2 get /c/x 2>&1 | grep -v '"level"')"
cluster_stop_all

# --- JWT tokens ---
openssl genrsa -out "$E2E_DIR/jwt.key" 2048 2>/dev/null
openssl rsa -in "$E2E_DIR/jwt.key" -pubout -out "$E2E_DIR/jwt.pub" 2>/dev/null
JWT="jwt,pub-key=$E2E_DIR/jwt.pub,priv-key=$E2E_DIR/jwt.key,sign-method=RS256,ttl=10s"
rm -rf "$E2E_DIR/data" "$E2E_DIR/etcd"
e2e_start_server --auth-token "$JWT" --auth-failure-delay=300ms --bcrypt-cost=4
bash "$HERE/auth_scenario.sh" "$EP" 2>&1 | normalise >"$E2E_DIR/leasehold-jwt.out"
e2e_start_etcd --auth-token "$JWT"
bash "$HERE/auth_scenario.sh" "127.0.0.1:$ETCD_PORT" 2>&1 | normalise >"$E2E_DIR/etcd-jwt.out"
e2e_stop_etcd
if diff "$E2E_DIR/etcd-jwt.out" "$E2E_DIR/leasehold-jwt.out" >"$E2E_DIR/diff"; then
  pass "with JWT tokens, etcdctl's auth session prints the same as on etcd 3.4 ($(wc -l <"$E2E_DIR/etcd-jwt.out") lines)"
else
  fail "with JWT tokens, etcdctl's auth session differs from etcd 3.4's (< etcd, > leasehold)" "$(cat "$E2E_DIR/diff")"
fi
ctl user add root:rootpw >/dev/null 2>&1; ctl user grant-role root root >/dev/null 2>&1
ctl auth enable >/dev/null 2>&1
TOKEN=$(gw auth/authenticate '{"name":"root","password":"rootpw"}' | token_of)
check_match "authenticate gives a JWT" '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' "$TOKEN"
CLAIMS=$(python3 -c 'import base64, json, sys, time
part = sys.argv[1].split(".")[1]
claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
print(claims["username"], isinstance(claims["revision"], (int, float)), 0 < claims["exp"] - time.time() <= 10)' "$TOKEN")
check "naming its user and auth revision, expiring after the ttl" "root True True" "$CLAIMS"
check_match "a put with it succeeds" ' 200$' "$(gw kv/put "$PUT" -H "Authorization: $TOKEN")"
e2e_stop_server
e2e_start_server --auth-token "$JWT"
check_match "it is still good after a restart (nothing to remember)" ' 200$' "$(gw kv/range '{"key":"L2MveA=="}' -H "Authorization: $TOKEN")"
ctl --user root:rootpw user add dave:dpw >/dev/null 2>&1
check_match "an auth change voids it, with etcd's error" '"message":"etcdserver: revision of auth store is old","code":3} 400$' \
  "$(gw kv/range '{"key":"L2MveA=="}' -H "Authorization: $TOKEN")"
TOKEN=$(gw auth/authenticate '{"name":"root","password":"rootpw"}' | token_of)
check_match "a new one works" ' 200$' "$(gw kv/range '{"key":"L2MveA=="}' -H "Authorization: $TOKEN")"
# exp is in whole seconds: wait the 10 s ttl out with 2.5 s to spare on a loaded machine.
sleep 12.5
check_match "until its ttl passes" '"message":"etcdserver: invalid auth token","code":16} 401$' \
  "$(gw kv/range '{"key":"L2MveA=="}' -H "Authorization: $TOKEN")"
check "etcdctl --user still works (a fresh token per call)" OK "$(ctl --user root:rootpw put /c/y v 2>&1)"
e2e_stop_server
OUT=$("$LEASEHOLD_BIN" --data-dir "$E2E_DIR/bad" --listen-client-urls "http://127.0.0.1:$(free_port)" \
  --auth-token "jwt,pub-key=$E2E_DIR/jwt.pub" 2>&1); RC=$?
check "a jwt --auth-token without sign-method stops the start" 1 "$RC"
check_match "naming the problem" 'bad --auth-token.*sign-method' "$OUT"
e2e_finish
