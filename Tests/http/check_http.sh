#!/usr/bin/env bash
# The HTTP services against independent clients: Google's Firebase Admin SDK for Python and PyJWT
# for the identity service, a scripted app (Python requests) doing the seed flow for 50 users at
# once and signing in every way the app does, and a token security matrix made with PyJWT and the test's own keys. The store the flow
# leaves must equal a replay of the traffic the server published.
#
# usage: check_http.sh FARESYNC
set -euo pipefail

FARESYNC=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d)
PROJECT=demo-faresync
SERVER_PID=
. "$HERE/../lib/checks.sh"
stop_server() { stop_group "$SERVER_PID"; SERVER_PID=; }
trap 'stop_server; rm -rf "$WORK"' EXIT

start_server() { # start_server STORE LOG [ARGS…]
  local store=$1 log=$2; shift 2
  PORT=$(free_port)
  setsid "$FARESYNC" serve --http-port "$PORT" --store "$store" ${log:+--log "$log"} --bcrypt-cost 4 --issue-delay 0.2 "$@" \
    > "$WORK/serve.log" 2>&1 &
  SERVER_PID=$!
  wait_url 10 "http://127.0.0.1:$PORT/healthz" && return 0
  echo "the server did not start:"; cat "$WORK/serve.log"; return 1
}

# The identity service through the Admin SDK and PyJWT.
start_server "sqlite:$WORK/admin.sqlite" "$WORK/admin.jsonl"
check "Firebase Admin SDK: users, claims within 5 s, lookups, errors, revocation; PyJWT verifies the tokens" \
  env FIREBASE_AUTH_EMULATOR_HOST="127.0.0.1:$PORT" python3 "$HERE/../identity/admin_sdk.py" "$PROJECT"
stop_server
cp "$WORK/admin.jsonl" "$WORK/admin-at-restart.jsonl"
# Users, password hashes, refresh tokens and keys are in the store: a restarted server knows them.
start_server "sqlite:$WORK/admin.sqlite" "$WORK/admin.jsonl"
restarted() {
  local session token
  session=$(curl -fs "http://127.0.0.1:$PORT/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword" \
    -d '{"email":"user2@example.com","password":"secret-2","returnSecureToken":true}') || return 1
  token=$(echo "$session" | python3 -c 'import json, sys; print(json.load(sys.stdin)["refreshToken"])')
  curl -fs "http://127.0.0.1:$PORT/securetoken.googleapis.com/v1/token" -d "grant_type=refresh_token&refresh_token=$token" \
    | python3 -c 'import base64, json, sys; t = json.load(sys.stdin)["id_token"].split(".")[1]; c = json.loads(base64.urlsafe_b64decode(t + "===")); sys.exit(0 if c["sub"] == "admin-user-02" and "abt_id" in c else f"claims {c}")'
}
check "after a restart, a user signs in with the password and refreshes a token with the claims" restarted
curl -fs -X POST "http://127.0.0.1:$PORT/identitytoolkit.googleapis.com/v1/accounts:signUp" -d '{}' > /dev/null
stop_server
check "the log goes on after the restart: each topic's offsets count on, none twice" python3 "$HERE/log_offsets_continue.py" "$WORK/admin.jsonl" "$WORK/admin-at-restart.jsonl"

# The seed flow for 50 users, into a store of its own (the Admin API's claim changes are not
# events, so a store they touched does not replay from the traffic alone).
start_server "sqlite:$WORK/flow.sqlite" "$WORK/published.jsonl"
check "the seed flow over HTTP for 50 users at once" python3 "$HERE/seed_flow.py" "http://127.0.0.1:$PORT" 50 "$WORK/outcomes.txt"
stop_server
"$FARESYNC" export --store "sqlite:$WORK/flow.sqlite" --out "$WORK/served.jsonl"
check "every user's documents follow the reference's reservation rules (paid: contract, cancelled: nothing, declined: REJECT kept)" \
  python3 "$HERE/seed_outcomes.py" "$WORK/outcomes.txt" "$WORK/served.jsonl"
"$FARESYNC" replay "$WORK/published.jsonl" --store "sqlite:$WORK/replayed.sqlite" > /dev/null 2>&1
"$FARESYNC" export --store "sqlite:$WORK/replayed.sqlite" --out "$WORK/replayed.jsonl"
check "the served store's export equals a replay of the published traffic ($(wc -l < "$WORK/published.jsonl") messages)" \
  same "$WORK/served.jsonl" "$WORK/replayed.jsonl"

# Every API family answers as recorded in exchange.json (`exchange.py --record` writes it), compared as JSON values
# with each run's own tokens, uids, codes and times named.
start_server "sqlite:$WORK/exchange.sqlite" "" --oauth-provider --oauth-redirect-uri http://127.0.0.1/callback
check "48 requests of every API family answer as recorded (status, headers, bodies as JSON values)" \
  python3 "$HERE/exchange.py" "http://127.0.0.1:$PORT" "$HERE/exchange.json"
stop_server

# Every way in, as the app's SDK calls it: a phone number linked to an anonymous user who bought a
# ticket, the number on a second device, Google, Apple, a custom token, the OAuth provider's code
# flow with PKCE; one user-created per user.
start_server "sqlite:$WORK/signin.sqlite" "$WORK/signin.jsonl" --oauth-provider --oauth-redirect-uri http://127.0.0.1/callback
check "sign in as the app does: anonymous, phone linked, a second device, Google, Apple, a custom token, OAuth with PKCE" \
  python3 "$HERE/sign_in_flow.py" "http://127.0.0.1:$PORT" "$WORK/signin.jsonl" "$WORK/signin-uid.txt"
stop_server
linked_contract() {
  "$FARESYNC" export --store "sqlite:$WORK/signin.sqlite" --out "$WORK/signin-export.jsonl"
  nonempty "$WORK/signin-uid.txt" "$WORK/signin-export.jsonl" || return 1
  grep -q "\"customers/$(cat "$WORK/signin-uid.txt")/fareContracts/" "$WORK/signin-export.jsonl" \
    && echo "the fare contract is under the linked user's uid $(cat "$WORK/signin-uid.txt")"
}
check "the ticket the anonymous user bought is the phone user's fare contract" linked_contract

# With a broker: serve publishes to Kafka and a worker applies; the export equals a replay of the
# recorded topics.
"$FARESYNC" dev-broker --bootstrap-file "$WORK/boot.txt" > "$WORK/broker.out" 2>&1 &
BROKER_PID=$!
# waits_for TRIES COMMAND…: true once COMMAND succeeds, tried every 0.1 s, at most TRIES times.
waits_for() {
  local tries=$1; shift
  for _ in $(seq 1 "$tries"); do "$@" && return 0; sleep 0.1; done
  return 1
}
setup "the dev broker writes its bootstrap file" waits_for 100 test -s "$WORK/boot.txt"
RUN_PORT=$(free_port)
setsid "$FARESYNC" run --brokers "@$WORK/boot.txt" --store "sqlite:$WORK/kafka.sqlite" --sweep-interval 1 --http-port "$RUN_PORT" \
  > "$WORK/run.log" 2>&1 &
RUN_PID=$!
setup "the worker is ready (/readyz)" waits_for 200 curl -fs -o /dev/null "http://127.0.0.1:$RUN_PORT/readyz"
start_server "sqlite:$WORK/kafka.sqlite" "" --brokers "@$WORK/boot.txt"
check "the seed flow for 50 users with serve publishing to Kafka and a worker applying" \
  python3 "$HERE/seed_flow.py" "http://127.0.0.1:$PORT" 50 "$WORK/kafka-outcomes.txt"
stop_server
kill -TERM -- "-$RUN_PID" 2>/dev/null; wait "$RUN_PID" 2>/dev/null || true
# A worker of the same group takes over where the first stopped, and sweeps once caught up.
"$FARESYNC" run --brokers "@$WORK/boot.txt" --store "sqlite:$WORK/kafka.sqlite" --exit-at-end > "$WORK/run2.log" 2>&1
for topic in auth-users reservations fare-contracts; do
  "$FARESYNC" record --brokers "@$WORK/boot.txt" --topic "$topic" --exit-at-end --out "$WORK/rec-$topic.jsonl" 2> /dev/null
done
kill "$BROKER_PID" 2>/dev/null; wait "$BROKER_PID" 2>/dev/null || true
"$FARESYNC" export --store "sqlite:$WORK/kafka.sqlite" --out "$WORK/kafka-served.jsonl"
check "the worker's documents follow the reference's reservation rules" python3 "$HERE/seed_outcomes.py" "$WORK/kafka-outcomes.txt" "$WORK/kafka-served.jsonl"
"$FARESYNC" replay "$WORK"/rec-*.jsonl --store "sqlite:$WORK/kafka-replayed.sqlite" > /dev/null 2>&1
"$FARESYNC" export --store "sqlite:$WORK/kafka-replayed.sqlite" --out "$WORK/kafka-replayed.jsonl"
check "the worker's export equals a replay of the recorded topics ($(cat "$WORK"/rec-*.jsonl | wc -l) messages)" \
  same "$WORK/kafka-served.jsonl" "$WORK/kafka-replayed.jsonl"

# schemathesis against the live server's own /openapi.json: every response conforms to the
# document and none is a 5xx, for the app's calls (with a valid ID token) and the Admin API's.
if python3 -c "import schemathesis" 2> /dev/null; then
  start_server "sqlite:$WORK/schema.sqlite" "$WORK/schema.jsonl" --issue-delay 0 --oauth-provider
  TOKEN=$(curl -fs -X POST "http://127.0.0.1:$PORT/identitytoolkit.googleapis.com/v1/accounts:signUp" -d '{}' \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["idToken"])')
  CHECKS=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance
  check "schemathesis: the app's calls conform to /openapi.json, no 5xx" \
    python3 -m schemathesis.cli run "http://127.0.0.1:$PORT/openapi.json" -H "Authorization: Bearer $TOKEN" -c "$CHECKS" --max-examples 30 --seed 2026
  check "schemathesis: the Admin API's calls conform to /openapi.json, no 5xx" \
    python3 -m schemathesis.cli run "http://127.0.0.1:$PORT/openapi.json" -H "Authorization: Bearer owner" --include-tag "identity admin" -c "$CHECKS" \
    --max-examples 30 --seed 2026
  stop_server
else
  fail "schemathesis is not installed (make setup installs it)"
fi

# Bound to an address other than loopback, serve needs an admin token; with one, the Admin API
# takes only that token.
guarded() {
  local status=0
  "$FARESYNC" serve --http-host 0.0.0.0 --http-port 0 --public-url http://x --store "sqlite:$WORK/guard.sqlite" 2> "$WORK/guard.err" || status=$?
  [ "$status" -eq 2 ] && grep -q -- "--admin-token" "$WORK/guard.err" || { echo "exit $status: $(cat "$WORK/guard.err")"; return 1; }
  start_server "sqlite:$WORK/guard.sqlite" "" --admin-token s3cret
  local url="http://127.0.0.1:$PORT/identitytoolkit.googleapis.com/v1/projects/$PROJECT/accounts"
  local with_token owner
  with_token=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret' -d '{"localId":"guarded"}' "$url")
  owner=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer owner' -d '{"localId":"other"}' "$url")
  # An unsigned custom token names any uid: a guarded server refuses it unless told otherwise.
  local custom="http://127.0.0.1:$PORT/identitytoolkit.googleapis.com/v1/accounts:signInWithCustomToken?key=any"
  local unsigned
  unsigned=$(curl -s -o /dev/null -w '%{http_code}' -d '{"token":"{\"uid\":\"guarded\"}"}' "$custom")
  stop_server
  start_server "sqlite:$WORK/guard.sqlite" "" --admin-token s3cret --accept-unsigned-custom-tokens
  custom="http://127.0.0.1:$PORT/identitytoolkit.googleapis.com/v1/accounts:signInWithCustomToken?key=any"
  local allowed
  allowed=$(curl -s -o /dev/null -w '%{http_code}' -d '{"token":"{\"uid\":\"guarded\"}"}' "$custom")
  stop_server
  [ "$with_token $owner $unsigned $allowed" = "200 403 400 200" ] || {
    echo "with the token $with_token, with owner $owner, an unsigned custom token $unsigned, allowed $allowed (want 200 403 400 200)"
    return 1
  }
  echo "0.0.0.0 without a token: exit 2; with --admin-token: the token 200, owner 403, an unsigned custom token 400 unless allowed"
}
check "serve on a public address needs --admin-token, which then replaces owner and refuses unsigned custom tokens" guarded

check "token security matrix (PyJWT, the test's own keys): documented statuses, nothing published" \
  python3 "$HERE/security_matrix.py" "$FARESYNC" "$WORK/matrix" "$(free_port)"

check "serve SIGKILLed 5 times under 50 users' seed flow: every success the app saw is on the topics and in the store" \
  bash "$HERE/crash_serve.sh" "$FARESYNC"
check "6 clients guessing passwords are throttled while wrk searches (both p99s printed; their goal is make bench's)" \
  python3 "$HERE/guessing_load.py" "$FARESYNC" "$WORK/guessing"

echo "http: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
