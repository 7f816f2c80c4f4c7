#!/usr/bin/env bash
# The soak: the worker (mirroring into the Cloud Firestore emulator as it goes), serve publishing
# through a dev broker, and 50 users looping the app's seed flow, for SOAK_MINUTES (default 30).
# Every 10 s the processes' resident sets and the mirror's lag are sampled. It fails when the worker's
# or serve's resident set grows (the slope of a line fitted after the warm-up above 1 % of its size
# per 10 minutes), when the mirror falls behind more than LAG_BOUND seconds, on any 5xx; and at the
# end, when `mirror --verify` finds a difference, or when the store's export differs from a replay
# of the published topics. The figures are printed and plotted to out/soak/soak.png.
#
# usage: soak.sh FARESYNC   (SOAK_MINUTES=30, SOAK_SEED=7)
set -euo pipefail

FARESYNC=$(realpath "$1")
MINUTES=${SOAK_MINUTES:-30}
SEED=${SOAK_SEED:-7}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT="$REPO/out/soak"
WORK=$(mktemp -d)
JAR=${FIRESTORE_EMULATOR_JAR:-/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar}
PROJECT=demo-faresync
USERS=50
# The app waits up to 15 s for a reservation to show before it calls it lost (seed_flow.py); a
# mirror further behind than that leaves the app's Firestore listeners showing nothing of a purchase.
LAG_BOUND=15
# The warm-up the fit leaves out: caches, pools and the emulator's first collections fill then.
if [ "$MINUTES" -ge 10 ]; then WARMUP=300; else WARMUP=$((MINUTES * 30)); fi
. "$HERE/../lib/checks.sh"

EMULATOR_PID= BROKER_PID= RUN_PID= SERVE_PID= SAMPLER_PID= FLOW_PID= RECORDER_PIDS=
cleanup() {
  stop_process "$FLOW_PID"
  stop_process "$SAMPLER_PID"
  for pid in $RECORDER_PIDS; do stop_group "$pid"; done
  stop_group "$SERVE_PID"; stop_group "$RUN_PID"; stop_group "$BROKER_PID"; stop_group "$EMULATOR_PID"
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"
mkdir -p "$OUT"
[ -f "$JAR" ] || { echo "soak: the Cloud Firestore emulator is not installed ($JAR)"; exit 1; }
python3 -c "import matplotlib, numpy" 2> /dev/null || { echo "soak: matplotlib and numpy are needed (pip install matplotlib)"; exit 1; }

# Each process in a group of its own (the emulator as java directly, so that no JVM outlives it).
EMULATOR_PORT=$(free_port)
setsid java -Duser.language=en -cp "$JAR" com.google.cloud.datastore.emulator.firestore.CloudFirestore \
  start --host=127.0.0.1 --port="$EMULATOR_PORT" --rules="$REPO/firestore.rules" > emulator.log 2>&1 &
EMULATOR_PID=$!
wait_url 60 "http://127.0.0.1:$EMULATOR_PORT/" || { echo "the emulator did not start:"; tail -20 emulator.log; exit 1; }
setsid "$FARESYNC" dev-broker --bootstrap-file boot.txt > broker.out 2>&1 &
BROKER_PID=$!
for _ in $(seq 1 100); do [ -s boot.txt ] && break; sleep 0.1; done
[ -s boot.txt ] || { echo "the dev broker did not start:"; cat broker.out; exit 1; }
# The dev broker (librdkafka's mock cluster) keeps only the latest messages of a partition, so the
# published log is recorded as it is published, from the start, rather than read back at the end.
for topic in auth-users reservations fare-contracts; do
  setsid "$FARESYNC" record --brokers @boot.txt --topic "$topic" --out "rec-$topic.jsonl" 2> "record-$topic.err" &
  RECORDER_PIDS="$RECORDER_PIDS $!"
done
STORE="sqlite:$WORK/store.sqlite"
RUN_PORT=$(free_port)
setsid "$FARESYNC" run --brokers @boot.txt --store "$STORE" --firestore "127.0.0.1:$EMULATOR_PORT" --firestore-project "$PROJECT" \
  --sweep-interval 1 --http-port "$RUN_PORT" --log-level warning > run.log 2>&1 &
RUN_PID=$!
wait_url 30 "http://127.0.0.1:$RUN_PORT/readyz" || { echo "the worker did not get ready:"; tail -20 run.log; exit 1; }
PORT=$(free_port)
setsid "$FARESYNC" serve --brokers @boot.txt --store "$STORE" --http-port "$PORT" --bcrypt-cost 4 --issue-delay 0.2 \
  --log-level warning > serve.log 2>&1 &
SERVE_PID=$!
wait_url 20 "http://127.0.0.1:$PORT/healthz" || { echo "serve did not start:"; tail -20 serve.log; exit 1; }

python3 "$HERE/sample.py" samples.csv 10 "http://127.0.0.1:$RUN_PORT/metrics" \
  "worker=$RUN_PID,http://127.0.0.1:$RUN_PORT/metrics" "serve=$SERVE_PID,http://127.0.0.1:$PORT/metrics" \
  "dev-broker=$BROKER_PID" "emulator=$EMULATOR_PID" &
SAMPLER_PID=$!
echo "     soak: $USERS users for $MINUTES min (seed $SEED), sampled every 10 s, the fit after $((WARMUP / 60)) min"
# A user pauses a second between orders on average, and starts over with a new account before one
# order in fifty, which keeps the sign-ups under serve's default limit per client address.
flow_status=0
python3 "$REPO/Tests/http/crash_flow.py" "http://127.0.0.1:$PORT" "$USERS" "$((MINUTES * 60))" results.txt statuses.json "$SEED" 0.02 1.0 \
  > flow.out 2>&1 || flow_status=$?
stop_process "$SAMPLER_PID"
SAMPLER_PID=
cp samples.csv "$OUT/samples.csv"
check "the app loop: $USERS users for $MINUTES min, no 5xx" bash -c "cat flow.out; exit $flow_status"
# The dev broker keeps every message in memory, as its log, and the emulator every document: both
# grow with the traffic by design, and are plotted and printed but not held to the slope.
report_status=0
python3 "$HERE/soak_report.py" samples.csv "$OUT/soak.png" "$WARMUP" "$LAG_BOUND" worker serve -- dev-broker emulator \
  > report.out 2>&1 || report_status=$?
check "the resident sets of the worker and serve stay flat, the mirror's lag within $LAG_BOUND s" test "$report_status" = 0
sed 's/^/     /' report.out

# The end: serve stops (its relay's last pass), the worker's group catches up, and the mirror with it.
stop_group "$SERVE_PID"; SERVE_PID=
stop_group "$RUN_PID"; RUN_PID=
check "the worker's last catch-up, mirrored (run --exit-at-end)" \
  "$FARESYNC" run --brokers @boot.txt --store "$STORE" --firestore "127.0.0.1:$EMULATOR_PORT" --firestore-project "$PROJECT" --exit-at-end
check "mirror --verify: the emulator holds what the store holds" \
  "$FARESYNC" mirror --store "$STORE" --firestore "127.0.0.1:$EMULATOR_PORT" --firestore-project "$PROJECT" --verify
# The recorders have the whole log once their files stop growing; SIGTERM ends them cleanly.
previous=
for _ in $(seq 1 60); do
  sleep 2
  now=$(cat rec-*.jsonl | wc -l)
  [ "$now" = "$previous" ] && break
  previous=$now
done
for pid in $RECORDER_PIDS; do stop_group "$pid"; done
RECORDER_PIDS=
stop_group "$BROKER_PID"; BROKER_PID=
"$FARESYNC" export --store "$STORE" --out served.jsonl
check "what the app was told went through is on the topics and in the store" \
  python3 "$REPO/Tests/http/crash_outcomes.py" results.txt served.jsonl rec-*.jsonl
"$FARESYNC" replay rec-*.jsonl --store "sqlite:$WORK/replayed.sqlite" > /dev/null 2>&1
"$FARESYNC" export --store "sqlite:$WORK/replayed.sqlite" --out replayed.jsonl
check "the export ($(wc -l < served.jsonl) documents) equals a replay of the recorded topics ($(cat rec-*.jsonl | wc -l) messages)" \
  bash -c "[ -s served.jsonl ] && [ -s replayed.jsonl ] && cmp served.jsonl replayed.jsonl"

echo "soak: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
