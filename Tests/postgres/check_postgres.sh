#!/usr/bin/env bash
# PostgreSQL checks, run by `make test` inside Tests/lib/with_postgres.sh (which starts the server):
#  - replay into PostgreSQL exports what SQLite exports, for the logs, seeds and partitionings of
#    check_cli.sh and check_kafka.sh;
#  - three `faresync run` in one group on the dev broker (9 partitions a topic), one database:
#    all exit 0, the work is shared, the export is the replay's;
#  - the same with one of the three SIGKILLed mid-run and not restarted: the others take over;
#  - the same with the PostgreSQL server restarted mid-run: the workers wait for it and go on;
#  - /readyz says not ready while the server is away.
set -u
FARESYNC=${1:?usage: check_postgres.sh PATH-TO-faresync}
FARESYNC=$(cd "$(dirname "$FARESYNC")" && pwd)/$(basename "$FARESYNC")
: "${FARESYNC_TEST_POSTGRES:?run inside Tests/lib/with_postgres.sh}"
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
BROKER_PID=
cleanup() { [ -n "$BROKER_PID" ] && kill "$BROKER_PID" 2>/dev/null; jobs -p | xargs -r kill -9 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
cd "$WORK"
source "$HERE/../lib/checks.sh"

SERVER=${FARESYNC_TEST_POSTGRES%/*}
# database NAME: creates an empty database and prints its URL.
database() { psql -q "$FARESYNC_TEST_POSTGRES_ADMIN" -c "CREATE DATABASE $1" >/dev/null && echo "$SERVER/$1"; }
# same_export NAME EXPECTED STORE: the store's export equals EXPECTED, both as `faresync export
# --comparable` writes them (what Kafka cannot reproduce of an in-process replay left out).
same_export() {
  "$FARESYNC" export --store "$3" --out "$1.export" --comparable || { fail "$1: export failed"; return; }
  if same "$2" "$1.export"; then pass "$1: export equals the replay's ($(wc -l <"$1.export") documents)"
  else fail "$1: export differs from the replay's"; diff "$2" "$1.export" | head -5; fi
}

# Replays: the same bytes as SQLite's.
setup "simulate seed 11" "$FARESYNC" simulate --users 300 --seed 11 --faults --out s11.jsonl 2>/dev/null
setup "simulate seed 23" "$FARESYNC" simulate --users 200 --seed 23 --faults --out s23.jsonl 2>/dev/null
awk '{print; print}' s11.jsonl >dup.jsonl
python3 "$HERE/../cli/interleave_topics.py" s11.jsonl >mixed.jsonl
for seed in 11 23; do
  setup "SQLite replay of seed $seed" "$FARESYNC" replay "s$seed.jsonl" --store "sqlite:s$seed.sqlite" --lanes 1 --no-load-by-account >/dev/null
  setup "its export" "$FARESYNC" export --store "sqlite:s$seed.sqlite" --out "s$seed.export"
done
n=0
for variant in "s11.jsonl --lanes 1 --no-load-by-account" "s11.jsonl --lanes 8" "s11.jsonl --lanes 8 --no-load-by-account" \
  "dup.jsonl --lanes 3" "mixed.jsonl --lanes 2" "s23.jsonl --lanes 3"; do
  n=$((n + 1))
  set -- $variant
  expected=s11.export; [ "$1" = s23.jsonl ] && expected=s23.export
  url=$(database "replay$n")
  if "$FARESYNC" replay $variant --store "$url" >"replay$n.summary" 2>&1 && "$FARESYNC" export --store "$url" --out "replay$n.export" \
    && same "$expected" "replay$n.export"; then pass "replay $variant: the same bytes as SQLite's"
  else fail "replay $variant into PostgreSQL: $(tail -2 "replay$n.summary")"; fi
done

# The dev broker, 9 partitions a topic, holding a log large enough that the workers still work
# when a killed member's session times out.
"$FARESYNC" dev-broker --partitions 9 --bootstrap-file boot.txt >broker.out 2>broker.err &
BROKER_PID=$!
for _ in $(seq 50); do [ -s boot.txt ] && break; sleep 0.1; done
[ -s boot.txt ] || { echo "FAIL dev-broker did not start: $(cat broker.err)"; exit 1; }
setup "simulate seed 31" "$FARESYNC" simulate --users 4000 --seed 31 --faults --out big.jsonl 2>/dev/null
setup "SQLite replay of seed 31" "$FARESYNC" replay big.jsonl --store sqlite:big.sqlite >/dev/null
setup "its export" "$FARESYNC" export --store sqlite:big.sqlite --out big.comparable --comparable
setup "replay --brokers" "$FARESYNC" replay big.jsonl --brokers @boot.txt >publish.out
WORKER_FLAGS=(--kafka-setting session.timeout.ms=6000 --kafka-setting heartbeat.interval.ms=500 --sweep-interval 1 --log-level warning)

# three_workers NAME DISRUPTION: three workers in group NAME on database NAME; DISRUPTION (none,
# kill or restart) happens after the first commit of the group.
three_workers() {
  local name=$1 disruption=$2 url pids=() statuses=() i batch=50
  url=$(database "$name")
  # Small batches: more transactions, so that the run still has work in hand when each member
  # joins, when the server goes down under it, or when a member is killed.
  for i in 1 2 3; do
    "$FARESYNC" run --brokers @boot.txt --group "$name" --store "$url" --exit-at-end --batch-size "$batch" "${WORKER_FLAGS[@]}" \
      2>"$name-$i.err" &
    pids+=($!)
  done
  if [ "$disruption" != none ]; then
    # Wait for the group's first commit; a kill comes a random half second later.
    for _ in $(seq 200); do
      [ "$(psql -tAq "$url" -c "SELECT count(*) FROM offsets" 2>/dev/null || echo 0)" -gt 0 ] && break
      sleep 0.05
    done
    [ "$disruption" = kill ] && sleep "0.$((RANDOM % 5))"
    if [ "$disruption" = kill ]; then
      kill -9 "${pids[0]}"
    else
      # Down for a second, as after a crash, and until a worker has found it gone (for up to 60 s):
      # a worker between transactions, in a rebalance, finds it gone only at its next one.
      local logs=("$PWD/$name"-*.err)
      (cd / && $FARESYNC_TEST_POSTGRES_CTL -m immediate stop >/dev/null || echo "restart: pg_ctl stop failed" >"$name-stop.err"
        sleep 1
        for _ in $(seq 1200); do grep -q "PostgreSQL unreachable" "${logs[@]}" && break; sleep 0.05; done
        $FARESYNC_TEST_POSTGRES_CTL start >/dev/null || echo "restart: pg_ctl start failed" >>"$name-stop.err")
    fi
  fi
  for i in 0 1 2; do wait "${pids[$i]}"; statuses+=($?); done
  local expected="0 0 0"
  [ "$disruption" = kill ] && expected="137 0 0"
  [ "${statuses[*]}" = "$expected" ] && pass "$name: exit statuses ${statuses[*]}" \
    || fail "$name: exit statuses ${statuses[*]}, not $expected: $(tail -n 3 "$name"-*.err)"
  local counts
  counts=$(for i in 1 2 3; do sed -n 's/^run: \([0-9]*\) messages.*/\1/p' "$name-$i.err"; done | xargs)
  if [ "$disruption" = kill ]; then
    [ "$(echo "$counts" | wc -w)" = 2 ] && ! echo " $counts " | grep -q " 0 " && pass "$name: the two left worked (${counts// / and } messages)" \
      || fail "$name: the two left did not both work: summaries: $counts"
  else
    # Members join at their own pace (a first join to the mock cluster takes seconds, more on a busy
    # machine), so a member may join after the others took its share: at least two work, and all
    # three end.
    local working
    working=$(for c in $counts; do [ "$c" -gt 0 ] && echo "$c"; done | wc -l)
    [ "$(echo "$counts" | wc -w)" = 3 ] && [ "$working" -ge 2 ] && pass "$name: the work is shared ($counts messages)" \
      || fail "$name: work not shared: $counts"
  fi
  [ "$disruption" = restart ] && { grep -q "PostgreSQL unreachable" "$name"-[123].err \
    && pass "$name: the workers waited for the server ($(cat "$name"-[123].err | grep -o "PostgreSQL unreachable[a-z ,()]*" | sort | uniq -c | xargs))" \
    || fail "$name: no worker noticed the restart: $(cat "$name-stop.err" 2>/dev/null) $(tail -n 2 "$name"-[123].err)"; }
  same_export "$name" big.comparable "$url"
}
three_workers three none
three_workers killed kill
three_workers restarted restart

# /readyz while the server is away: not ready, then ready again when it is back.
PORT=$(free_port)
url=$(database readyz)
"$FARESYNC" run --brokers @boot.txt --group readyz --store "$url" --http-port "$PORT" --batch-size 500 "${WORKER_FLAGS[@]}" 2>readyz.err &
W=$!
ready() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz"; }
for _ in $(seq 100); do [ "$(ready)" = 200 ] && break; sleep 0.2; done
before=$(ready)
(cd / && $FARESYNC_TEST_POSTGRES_CTL -m immediate stop >/dev/null)
away=$(ready)
(cd / && $FARESYNC_TEST_POSTGRES_CTL start >/dev/null)
for _ in $(seq 50); do [ "$(ready)" = 200 ] && break; sleep 0.2; done
back=$(ready)
[ "$before $away $back" = "200 503 200" ] && pass "/readyz: ready, not ready while PostgreSQL is away, ready again" \
  || fail "/readyz answered $before, $away, $back (want 200, 503, 200): $(tail -n 2 readyz.err)"
kill -TERM $W
wait $W && pass "the worker drains and exits 0 after the outage" || fail "the worker exited $?: $(tail -n 3 readyz.err)"

echo "postgres: $passed passed, $failed failed"
[ "$failed" = 0 ]
