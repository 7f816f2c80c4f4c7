#!/usr/bin/env bash
# The worker mirroring into the real Cloud Firestore emulator (with the shipped firestore.rules)
# from a dev broker: SIGKILLed while the mirror is behind the store, restarted, run to the end and
# verified; and a last catch-up that SIGTERM interrupts while the emulator does not answer.
#
# usage: check_firestore_workers.sh FARESYNC
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/emulator.sh" "$1"

# 1. The worker SIGKILLed 5 times while it mirrors (each time once the mirror has moved on and the
#    worker has run ahead of it), restarted each time on more traffic; then run to the end.
"$FARESYNC" dev-broker --partitions 9 --bootstrap-file boot.txt > broker.out 2> broker.err &
BROKER_PID=$!
for _ in $(seq 100); do [ -s boot.txt ] && break; sleep 0.1; done
WORKER=(run --brokers @boot.txt --group kills --store "sqlite:$WORK/kills.sqlite" --sweep-interval 1 --log-level error
        --kafka-setting session.timeout.ms=6000 --kafka-setting heartbeat.interval.ms=500)
mid=0
reached=0
for kill in 1 2 3 4 5; do
  # A new day of traffic before each start, so that every kill finds a backlog in hand.
  "$FARESYNC" simulate --users 4000 --seed $((42 + kill)) --brokers @boot.txt 2> /dev/null
  KILL_HTTP=$(free_port)
  "$FARESYNC" "${WORKER[@]}" --http-port "$KILL_HTTP" 2>> kills.err &
  pid=$!
  # Until the worker has its partitions (a killed member's session expires first), the mirror has
  # moved on since the last kill, and the worker has run well ahead of it.
  wait_url 60 "http://127.0.0.1:$KILL_HTTP/readyz" || true # the wait for the mirror below bounds the round
  for _ in $(seq 600); do
    head=$(sqlite3 "$WORK/kills.sqlite" "SELECT head FROM feed" 2> /dev/null || echo 0)
    position=$(mirror_position)
    [ "$position" -gt "$reached" ] && [ $((head - position)) -gt 1000 ] && break
    sleep 0.1
  done
  sleep "$(python3 -c "import random; random.seed($kill); print(round(random.random() * 0.1, 2))")"
  kill -9 "$pid"; wait "$pid" 2> /dev/null || true
  reached=$(mirror_position)
  head=$(sqlite3 "$WORK/kills.sqlite" "SELECT head FROM feed" 2> /dev/null || echo 0)
  [ "$reached" -lt "$head" ] && mid=$((mid + 1))
  echo "     kill $kill: the store at feed position $head, the mirror at $reached"
done
# A kill lands behind the mirror only when the restarted worker got its partitions back and ran
# ahead in time; the group's rebalances after a kill take a while on the mock cluster.
if "$FARESYNC" "${WORKER[@]}" --exit-at-end 2>> kills.err && [ "$mid" -ge 3 ]; then
  pass "the worker SIGKILLed 5 times ($mid with the mirror behind the store), restarted, runs to the end"
else
  fail "the killed workers ($mid of 5 kills with the mirror behind the store)"; tail -5 kills.err
fi
check "mirror --verify after the killed workers" "$FARESYNC" mirror --store "sqlite:$WORK/kills.sqlite" --verify

# 2. The worker's last catch-up retries while the emulator does not answer; SIGTERM still ends it.
"$FARESYNC" "${WORKER[@]}" --exit-at-end --firestore "127.0.0.1:$(free_port)" 2> unreachable.err &
pid=$!
for _ in $(seq 300); do grep -qs "^run: [0-9]* messages in" unreachable.err && break; sleep 0.1; done
sleep 1
kill -TERM "$pid" 2> /dev/null || true
for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
if ! kill -0 "$pid" 2> /dev/null && wait "$pid" && grep -q "^run: interrupted while the mirror caught up" unreachable.err; then
  pass "run --exit-at-end with the emulator unreachable: SIGTERM ends its last catch-up"
else
  kill -9 "$pid" 2> /dev/null || true
  fail "run --exit-at-end with the emulator unreachable, SIGTERM"; tail -3 unreachable.err
fi

echo "firestore-workers: $passed passed, $failed failed"
[ "$failed" = 0 ]
