#!/usr/bin/env bash
# serve SIGKILLed under the app's traffic: 50 users loop the seed flow against `serve --brokers`
# (publishing through its outbox to a dev broker) while a worker applies the topics into the same
# SQLite store; serve is SIGKILLed 5 times at seeded random moments and restarted on its port.
# Whatever the app was told succeeded must have been published and stored: every user whose
# sign-up answered 200 (claims set), every order that answered 201 (its reservation, or what its
# payment made of it), every payment callback that answered; and the store's export must equal a
# replay of the recorded topics.
#
# usage: crash_serve.sh FARESYNC [SEED]
set -euo pipefail

FARESYNC=$(realpath "$1")
SEED=${2:-7}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
USERS=50
SECONDS_OF_TRAFFIC=45
KILLS=5
. "$HERE/../lib/checks.sh"

BROKER_PID=
RUN_PID=
SERVE_PID=
FLOW_PID=
cleanup() {
  stop_process "$FLOW_PID"
  stop_group "$SERVE_PID"; stop_group "$RUN_PID"
  stop_process "$BROKER_PID"
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"

STORE="sqlite:$WORK/store.sqlite"
PORT=$(free_port)
start_serve() { # in a process group of its own, on the same port each time; waits for /healthz
  setsid "$FARESYNC" serve --brokers "@$WORK/boot.txt" --store "$STORE" --http-port "$PORT" --bcrypt-cost 4 --issue-delay 0.2 \
    --log-level warning >> serve.log 2>&1 &
  SERVE_PID=$!
  for _ in $(seq 1 200); do
    curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && return 0
    kill -0 "$SERVE_PID" 2> /dev/null || break
    sleep 0.05
  done
  echo "serve did not start:"; tail -20 serve.log; return 1
}

"$FARESYNC" dev-broker --bootstrap-file boot.txt > broker.out 2>&1 &
BROKER_PID=$!
for _ in $(seq 1 100); do [ -s boot.txt ] && break; sleep 0.1; done
[ -s boot.txt ] || { echo "the dev broker did not start:"; cat broker.out; exit 1; }
RUN_PORT=$(free_port)
setsid "$FARESYNC" run --brokers @boot.txt --store "$STORE" --sweep-interval 1 --http-port "$RUN_PORT" --log-level warning \
  > run.log 2>&1 &
RUN_PID=$!
wait_url 30 "http://127.0.0.1:$RUN_PORT/readyz" || { echo "the worker did not get ready:"; tail -20 run.log; exit 1; }
start_serve

# The kills' moments (seconds after the traffic starts), seeded, spread over the traffic's span
# and apart enough for a restarted serve to take requests before the next.
read -r -a MOMENTS < <(python3 -c "
import random
r = random.Random($SEED)
while True:
    m = sorted(round(r.uniform(3, $SECONDS_OF_TRAFFIC - 5), 2) for _ in range($KILLS))
    if all(b - a >= 2 for a, b in zip(m, m[1:])):
        print(*m); break")
echo "     kill moments (s after the traffic starts, seed $SEED): ${MOMENTS[*]}"

python3 "$HERE/crash_flow.py" "http://127.0.0.1:$PORT" "$USERS" "$SECONDS_OF_TRAFFIC" results.txt statuses.json "$SEED" \
  > flow.out 2>&1 &
FLOW_PID=$!
started=$(date +%s.%N)
landed=0
for moment in "${MOMENTS[@]}"; do
  python3 -c "import sys, time; time.sleep(max(0, $started + $moment - time.time()))"
  # A kill lands when it hits a serve that is up and answering, and SIGKILL is what ended it.
  if curl -fs --max-time 1 "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && kill -KILL -- "-$SERVE_PID" 2> /dev/null; then
    status=0; wait "$SERVE_PID" 2> /dev/null || status=$?
    if [ "$status" = 137 ]; then landed=$((landed + 1)); fi
    echo "     kill at $moment s: serve $SERVE_PID ended with status $status; $(wc -l < results.txt) results so far"
  else
    echo "     kill at $moment s: serve $SERVE_PID was not answering"
  fi
  SERVE_PID=
  sleep "$(python3 -c "import random; print(round(random.Random($SEED * 100 + ${moment%.*}).uniform(0, 1), 2))")"
  start_serve
done
flow_status=0
wait "$FLOW_PID" || flow_status=$?
FLOW_PID=
check "$KILLS SIGKILLs landed on a running serve (at ${MOMENTS[*]} s)" test "$landed" = "$KILLS"
check "the app loop ($USERS users, ${SECONDS_OF_TRAFFIC} s, serve killed $KILLS times): orders got through, no 5xx" \
  bash -c "cat flow.out; exit $flow_status"

# A captured order's fare contract is issued after --issue-delay; then serve stops (its relay's
# last pass) and a worker of the same group applies what is left.
sleep 2
stop_group "$SERVE_PID"; SERVE_PID=
stop_group "$RUN_PID"; RUN_PID=
"$FARESYNC" run --brokers @boot.txt --store "$STORE" --exit-at-end > run2.log 2>&1 || { echo "the last worker failed:"; tail -20 run2.log; exit 1; }
for topic in auth-users reservations fare-contracts; do
  "$FARESYNC" record --brokers @boot.txt --topic "$topic" --exit-at-end --out "rec-$topic.jsonl" 2> /dev/null
done
stop_process "$BROKER_PID"
BROKER_PID=
outbox=$(sqlite3 "$WORK/store.sqlite" "SELECT count(*) FROM records WHERE kind = 'outbox.messages'" 2> /dev/null || echo "?")
"$FARESYNC" export --store "$STORE" --out served.jsonl
check "what the app was told went through is on the topics and in the store (outbox left: $outbox)" \
  python3 "$HERE/crash_outcomes.py" results.txt served.jsonl rec-*.jsonl
"$FARESYNC" replay rec-*.jsonl --store "sqlite:$WORK/replayed.sqlite" > /dev/null 2>&1
"$FARESYNC" export --store "sqlite:$WORK/replayed.sqlite" --out replayed.jsonl
check "the export ($(wc -l < served.jsonl) documents) equals a replay of the recorded topics ($(cat rec-*.jsonl | wc -l) messages)" \
  bash -c "[ -s served.jsonl ] && [ -s replayed.jsonl ] && cmp served.jsonl replayed.jsonl"

echo "crash_serve: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
