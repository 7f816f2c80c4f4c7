#!/usr/bin/env bash
# Crash harness: `crash.sh PATH-TO-faresync KILLS SEED`.
# Runs `replay` (batch by batch, and loading an empty store by account), and the worker against a
# dev broker in another process, as subprocesses; SIGKILLs each KILLS times at seeded random points (after a seeded random number of further events is
# applied, or a seeded random delay when it applies too few); restarts; and checks the export is
# byte-identical to an uninterrupted run (the worker's: modulo dead letters' firstSeen and the
# log's unreadable line, which never reaches Kafka).
set -u
FARESYNC=${1:?usage: crash.sh PATH-TO-faresync KILLS SEED}
KILLS=${2:-3}
SEED=${3:-1}
FARESYNC=$(cd "$(dirname "$FARESYNC")" && pwd)/$(basename "$FARESYNC")
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
BROKER_PID=
cleanup() {
  [ -n "$BROKER_PID" ] && kill "$BROKER_PID" 2>/dev/null && wait "$BROKER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"
RANDOM=$SEED
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }
applied() { sqlite3 "$1" "SELECT count(*) FROM processed_events" 2>/dev/null || echo 0; }

# Starts "$@" in the background, kills it with SIGKILL once STORE has STEP more events applied (or
# after ~DELAY seconds), and prints how many events were applied then.
kill_at() { # STORE STEP DELAY COMMAND…
  local store=$1 step=$2 delay=$3; shift 3
  local target=$(( $(applied "$store") + step ))
  "$@" >/dev/null 2>&1 &
  local pid=$!
  local polls=$(( delay * 20 ))
  for _ in $(seq "$polls"); do
    [ "$(applied "$store")" -ge "$target" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  applied "$store"
}

"$FARESYNC" simulate --users 400 --seed "$SEED" --faults --out s.jsonl 2>/dev/null
"$FARESYNC" replay s.jsonl --store sqlite:clean.sqlite >/dev/null && "$FARESYNC" export --store sqlite:clean.sqlite --out clean.export
total=$(applied clean.sqlite)

# Replay batch by batch, killed KILLS times.
points=""
for _ in $(seq "$KILLS"); do
  step=$(( RANDOM % (total / 4 + 1) + 1 ))
  points="$points $(kill_at killed.sqlite "$step" 30 "$FARESYNC" replay s.jsonl --store sqlite:killed.sqlite --no-load-by-account \
                    --batch-size $(( RANDOM % 50 + 1 )) --partitions $(( RANDOM % 4 + 1 )))"
done
"$FARESYNC" replay s.jsonl --store sqlite:killed.sqlite >/dev/null && "$FARESYNC" export --store sqlite:killed.sqlite --out killed.export
echo "     replay SIGKILLed $KILLS times, with these events applied of $total:$points"
cmp -s clean.export killed.export && ok "replay killed $KILLS times: export identical" || bad "replay killed $KILLS times: export differs"

# The load of an empty store (all or nothing), killed after seeded random delays: each kill leaves
# the store empty or complete, and the next run loads it (or, once complete, changes nothing).
points=""
whole=yes
for _ in $(seq "$KILLS"); do
  SPILL=$(mktemp -d)
  TMPDIR=$SPILL "$FARESYNC" replay s.jsonl --store sqlite:loaded.sqlite >/dev/null 2>&1 &
  pid=$!
  sleep "0.$(printf '%02d' $(( RANDOM % 60 + 5 )))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  n=$(applied loaded.sqlite)
  points="$points $n"
  [ "$n" = 0 ] || [ "$n" = "$total" ] || whole=no
  rm -rf "$SPILL"
done
"$FARESYNC" replay s.jsonl --store sqlite:loaded.sqlite >/dev/null && "$FARESYNC" export --store sqlite:loaded.sqlite --out loaded.export
echo "     load SIGKILLed $KILLS times, with these events applied of $total:$points"
[ "$whole" = yes ] && ok "every killed load left the store empty or complete" || bad "a killed load left part of the store:$points"
cmp -s clean.export loaded.export && ok "load killed $KILLS times: export identical" || bad "load killed $KILLS times: export differs"

# The worker against a dev broker in another process, killed KILLS times.
"$FARESYNC" dev-broker --bootstrap-file boot.txt >/dev/null 2>broker.err &
BROKER_PID=$!
for _ in $(seq 50); do [ -s boot.txt ] && break; sleep 0.1; done
"$FARESYNC" replay s.jsonl --brokers @boot.txt >/dev/null
FLAGS=(--brokers @boot.txt --group crash --store sqlite:worker.sqlite --kafka-setting session.timeout.ms=6000
       --kafka-setting heartbeat.interval.ms=500 --sweep-interval 1 --log-level error)
points=""
for _ in $(seq "$KILLS"); do
  step=$(( RANDOM % (total / 4 + 1) + 1 ))
  points="$points $(kill_at worker.sqlite "$step" 40 "$FARESYNC" run "${FLAGS[@]}" --batch-size $(( RANDOM % 50 + 1 )))"
done
"$FARESYNC" run "${FLAGS[@]}" --exit-at-end 2>worker.err || bad "worker after kills: $(tail -n 3 worker.err)"
"$FARESYNC" export --store sqlite:worker.sqlite --out worker.export
echo "     worker SIGKILLed $KILLS times, with these events applied of $total:$points"
cmp -s <(python3 "$HERE/../cli/comparable_export.py" clean.export) <(python3 "$HERE/../cli/comparable_export.py" worker.export) && ok "worker killed $KILLS times: export identical" \
  || bad "worker killed $KILLS times: export differs"

echo "crash: $passed passed, $failed failed"
[ "$failed" = 0 ]
