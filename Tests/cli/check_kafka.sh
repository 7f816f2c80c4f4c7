#!/usr/bin/env bash
# Kafka integration checks, run by `make test`, against `faresync dev-broker` (librdkafka's mock
# cluster over TCP on 127.0.0.1) with kcat as an outside client:
#  - replay --brokers + run --exit-at-end gives the in-process replay's export;
#  (the worker SIGKILLed mid-stream and restarted: Tests/crash/crash.sh);
#  - the same with two workers in one group sharing the work, and with one of them killed;
#  - faresync record writes the same lines as kcat -C -J -e, and kcat's recording replays to the same export;
#  - /healthz, /readyz and /metrics while running;
#  - a re-drive answered by `run --http-port` survives a SIGKILL right after its answer (redrive_kill.py).
set -u
FARESYNC=${1:?usage: check_kafka.sh PATH-TO-faresync}
FARESYNC=$(cd "$(dirname "$FARESYNC")" && pwd)/$(basename "$FARESYNC")
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
BROKER_PID=
cleanup() { [ -n "$BROKER_PID" ] && kill "$BROKER_PID" 2>/dev/null; jobs -p | xargs -r kill 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
cd "$WORK"
. "$HERE/../lib/checks.sh"
# Exports are compared as `faresync export --comparable` writes them (what Kafka cannot reproduce of
# an in-process replay left out).
same_as_replay() { # NAME STORE
  "$FARESYNC" export --store "sqlite:$2" --out "$1.export" --comparable || { fail "$1: export failed"; return; }
  if same replay.comparable "$1.export"; then pass "$1: export equals the in-process replay's ($(wc -l <"$1.export") documents)"
  else fail "$1: export differs from the in-process replay's"; diff replay.comparable "$1.export" | head -5; fi
}
WORKER_FLAGS=(--kafka-setting session.timeout.ms=6000 --kafka-setting heartbeat.interval.ms=500 --sweep-interval 1 --log-level warning)

"$FARESYNC" dev-broker --bootstrap-file boot.txt >broker.out 2>broker.err &
BROKER_PID=$!
for _ in $(seq 50); do [ -s boot.txt ] && break; sleep 0.1; done
[ -s boot.txt ] || { echo "FAIL dev-broker did not start: $(cat broker.err)"; exit 1; }
head -1 broker.out | grep -q '^bootstrap: 127.0.0.1:' && pass "dev-broker prints its bootstrap line" || fail "dev-broker's first line: $(head -1 broker.out)"
BOOT=$(sed 's/^bootstrap: //' boot.txt)

setup "simulate" "$FARESYNC" simulate --users 200 --seed 23 --faults --out s.jsonl 2>/dev/null
setup "the in-process replay" "$FARESYNC" replay s.jsonl --store sqlite:replay.sqlite >/dev/null
setup "the in-process replay's export" "$FARESYNC" export --store sqlite:replay.sqlite --out replay.comparable --comparable
setup "replay --brokers" "$FARESYNC" replay s.jsonl --brokers @boot.txt >publish.out
published1=$(sed -n 's/^published \([0-9]*\) messages.*/\1/p' publish.out)
[ "${published1:-0}" -gt 0 ] && pass "replay --brokers: $(cat publish.out)" || fail "replay --brokers: $(cat publish.out)"

# One worker, to the end.
"$FARESYNC" run --brokers @boot.txt --group g-one --store sqlite:one.sqlite --exit-at-end "${WORKER_FLAGS[@]}" 2>one.err \
  && pass "run --exit-at-end exits 0" || fail "run --exit-at-end: $(tail -3 one.err)"
same_as_replay one one.sqlite

# The dead letters reached <topic>.DLT after their commit, each once (no crash here), with their
# original coordinates, reason and error as headers.
for t in auth-users reservations fare-contracts; do timeout 30 kcat -C -J -e -q -b "$BOOT" -t "$t.DLT"; done >dlt.jsonl
"$FARESYNC" export --store sqlite:one.sqlite --out one.full
if python3 "$HERE/dlt_matches_store.py" one.full dlt.jsonl
then pass "dead letters published to <topic>.DLT after commit, once each, with their headers"; else fail "the .DLT topics differ from the store's dead letters"; fi

# Two workers in one group, one store. Both have joined, on a broker of their own, before the
# messages arrive: a worker that joins late can find its share applied by the other already.
"$FARESYNC" dev-broker --bootstrap-file boot2.txt >broker2.out 2>broker2.err &
BROKER2_PID=$!
for _ in $(seq 50); do [ -s boot2.txt ] && break; sleep 0.1; done
TWO_FLAGS=(--kafka-setting session.timeout.ms=6000 --kafka-setting heartbeat.interval.ms=500 --sweep-interval 1 --log-level info)
"$FARESYNC" run --brokers @boot2.txt --group g-two --store sqlite:two.sqlite --batch-size 20 "${TWO_FLAGS[@]}" 2>two-a.err &
A=$!
"$FARESYNC" run --brokers @boot2.txt --group g-two --store sqlite:two.sqlite --batch-size 20 "${TWO_FLAGS[@]}" 2>two-b.err &
B=$!
deadline=$((SECONDS + 60))
while [ $SECONDS -lt $deadline ]; do grep -q "assigned" two-a.err && grep -q "assigned" two-b.err && break; sleep 0.1; done
setup "replay --brokers to the second broker" "$FARESYNC" replay s.jsonl --brokers @boot2.txt >publish2.out
published=$(sed -n 's/^published \([0-9]*\) messages.*/\1/p' publish2.out)
# Until every published message's position is committed (up to 60 s), then a graceful stop.
committed() { sqlite3 two.sqlite "SELECT coalesce(sum(next), 0) FROM offsets WHERE consumer = 'g-two'" 2>/dev/null || echo 0; }
for _ in $(seq 600); do [ "$(committed)" = "$published" ] && break; sleep 0.1; done
kill -TERM $A $B
wait $A; a=$?
wait $B; b=$?
# A stopped worker has not swept at the end as --exit-at-end does (and the replay): one more member,
# which finds everything applied, sweeps and exits.
"$FARESYNC" run --brokers @boot2.txt --group g-two --store sqlite:two.sqlite --exit-at-end "${WORKER_FLAGS[@]}" 2>two-c.err \
  || fail "the sweeping worker: $(tail -n 2 two-c.err)"
kill "$BROKER2_PID" 2>/dev/null
[ $a = 0 ] && [ $b = 0 ] && pass "two workers exit 0" || fail "two workers exit $a and $b: $(tail -n 2 two-a.err two-b.err)"
na=$(sed -n 's/^run: \([0-9]*\) messages.*/\1/p' two-a.err)
nb=$(sed -n 's/^run: \([0-9]*\) messages.*/\1/p' two-b.err)
[ "${na:-0}" -gt 0 ] && [ "${nb:-0}" -gt 0 ] && [ $((na + nb)) -ge "${published:-1}" ] \
  && pass "two workers shared the work: $na and $nb messages of $published" || fail "work not shared: ${na:-?} and ${nb:-?} messages of ${published:-?}"
same_as_replay two-workers two.sqlite

# A member killed (and not restarted) right after both have partitions, with --exit-at-end: the
# other applies its own, waits for the dead member's session to time out rather than leave, takes
# those partitions over and exits 0 with the whole export. The dead member's batches of one message
# keep its share unapplied when it dies. (Should the other have been alone in the group long enough
# to apply everything, it has nothing to wait for; the line after the checks says which it was.)
"$FARESYNC" run --brokers @boot.txt --group g-kill --store sqlite:kill.sqlite --exit-at-end "${TWO_FLAGS[@]}" 2>kill-a.err &
A=$!
"$FARESYNC" run --brokers @boot.txt --group g-kill --store sqlite:kill.sqlite --exit-at-end --batch-size 1 "${TWO_FLAGS[@]}" 2>kill-b.err &
B=$!
both_assigned() { grep -q "assigned [1-9]" kill-a.err && grep -q "assigned [1-9]" kill-b.err; }
# (The mock cluster can answer a member's SyncGroup with "Invalid request", and each rejoin waits
# out another join round: a group of two can take several rounds to settle.)
deadline=$((SECONDS + 60))
while [ $SECONDS -lt $deadline ]; do both_assigned && break; sleep 0.02; done
# What the store holds when the kill lands: the kill counts only while both have a share and the
# group has not yet applied every message.
at_kill=$(sqlite3 -cmd ".timeout 5000" kill.sqlite "SELECT coalesce(sum(next), 0) FROM offsets WHERE consumer = 'g-kill'" 2>&1)
kill -9 $B
wait $B 2>/dev/null
if both_assigned && [ "$at_kill" -lt "$published1" ] 2>/dev/null; then
  pass "member killed while both had partitions, with $at_kill of $published1 messages applied"
else
  fail "member killed: not while both had partitions and work was left (assigned: $(grep -c "assigned [1-9]" kill-a.err kill-b.err | xargs), applied: $at_kill of $published1)"
fi
for _ in $(seq 600); do kill -0 $A 2>/dev/null || break; sleep 0.1; done
kill -0 $A 2>/dev/null && { kill -9 $A; fail "member killed: the other did not exit within 60 s"; }
wait $A && pass "member killed: the other exits 0" || fail "member killed: the other exits $?: $(tail -n 2 kill-a.err)"
same_as_replay member-killed kill.sqlite
grep -q "waiting for the group's other partitions" kill-a.err && echo "     (the other waited for the dead member's partitions)" \
  || echo "     (the other took the dead member's partitions over before it ran out of its own)"

# record vs kcat, and kcat's recording replayed.
: >kcat-all.jsonl
for t in auth-users reservations fare-contracts; do
  timeout 30 kcat -C -J -e -q -b "$BOOT" -t "$t" >"kcat-$t.jsonl"
  "$FARESYNC" record --brokers @boot.txt --topic "$t" --exit-at-end --out "rec-$t.jsonl" 2>/dev/null
  if [ -s "kcat-$t.jsonl" ] && cmp -s <(sort "kcat-$t.jsonl") <(sort "rec-$t.jsonl"); then pass "record $t: the same $(wc -l <"rec-$t.jsonl") lines as kcat -C -J -e"
  else fail "record $t differs from kcat"; fi
  cat "kcat-$t.jsonl" >>kcat-all.jsonl
done
setup "replay of kcat's recording" "$FARESYNC" replay kcat-all.jsonl --store sqlite:kcat.sqlite --lanes 3 >/dev/null
same_as_replay kcat-recording kcat.sqlite

# Health and metrics while running.
PORT=$(free_port)
setup "simulate seed 99" "$FARESYNC" simulate --users 20 --seed 99 --out s99.jsonl 2>/dev/null
"$FARESYNC" simulate --users 20 --seed 99 --brokers @boot.txt --rate 400 2>sim.err &
SIM=$!
"$FARESYNC" run --brokers @boot.txt --group g-http --store sqlite:http.sqlite --http-port "$PORT" "${WORKER_FLAGS[@]}" 2>http.err &
W=$!
ready=
for _ in $(seq 100); do
  if curl -sf "http://127.0.0.1:$PORT/readyz" >readyz.txt; then ready=1; break; fi
  sleep 0.2
done
[ -n "$ready" ] && pass "/readyz: $(cat readyz.txt)" || fail "/readyz never ready: $(cat readyz.txt 2>/dev/null)"
curl -sf "http://127.0.0.1:$PORT/healthz" | grep -q ok && pass "/healthz" || fail "/healthz"
wait $SIM && pass "simulate --brokers --rate exits 0" || fail "simulate --brokers --rate: $(tail -n 2 sim.err)"
# The worker also works through what the earlier checks produced: wait (up to 30 s) until its
# metrics show users created, lag and batch timings, and every message consumed, this traffic's
# (seed 99) included, rather than for a fixed time.
expected_messages=$((published1 + $(wc -l <s99.jsonl)))
metrics_complete() {
  grep -q '^faresync_events_total{.*outcome="created"' metrics.txt && grep -q '^faresync_consumer_lag' metrics.txt \
    && grep -q '^faresync_batch_processing_seconds_bucket' metrics.txt \
    && [ "$(sed -n 's/^faresync_messages_consumed_total \([0-9]*\).*/\1/p' metrics.txt)" -ge "$expected_messages" ] 2>/dev/null
}
for _ in $(seq 150); do
  curl -sf "http://127.0.0.1:$PORT/metrics" >metrics.txt && metrics_complete && break
  sleep 0.2
done
if metrics_complete; then
  pass "/metrics: $(grep -c '^faresync_' metrics.txt) series, the $expected_messages messages consumed"; grep -E '^faresync_(events_total|dead_letters_total|messages_consumed_total)' metrics.txt | head -6 | sed 's/^/     /'
else fail "/metrics lacks the expected series or $expected_messages messages consumed after 30 s: $(grep -E '^faresync_(events_total|consumer_lag|messages_consumed)' metrics.txt | head -c 600)"; fi
# The process's SQLite pages live in its page buffer (ProcessMemory): a buffer SQLite refused would
# leave every slot unused.
slots=$(sed -n 's/^faresync_sqlite_page_slots_used \([0-9.e+]*\).*/\1/p' metrics.txt)
if [ -n "$slots" ] && awk -v n="$slots" 'BEGIN { exit !(n > 0) }'; then pass "/metrics: SQLite's pages in the page buffer ($slots slots in use)"
else fail "/metrics: no slot of SQLite's page buffer in use: '$slots'"; fi
kill -TERM $W
wait $W && pass "SIGTERM: the worker drains and exits 0" || fail "SIGTERM exit status $?: $(tail -3 http.err)"

# A re-drive answered by `run --http-port` survives a SIGKILL right after its answer (a broker of its own).
python3 "$HERE/redrive_kill.py" "$FARESYNC" "$WORK" >redrive-kill.out 2>&1
redrive_status=$?
while IFS= read -r line; do
  case "$line" in "ok   "*) pass "${line#ok   }" ;; "FAIL "*) fail "${line#FAIL }" ;; esac
done <redrive-kill.out
[ "$redrive_status" = 0 ] || grep -q '^FAIL ' redrive-kill.out || fail "redrive_kill.py ended with status $redrive_status: $(tail -3 redrive-kill.out)"

echo "kafka: $passed passed, $failed failed"
[ "$failed" = 0 ]
