# Sourced by the Firestore check scripts, with the faresync executable as its argument, after
# setting HERE: the checks' counters (checks.sh), a work folder removed at the end with the
# emulator and the script's background jobs (and BROKER_PID, a dev broker the script started), and
# the Cloud Firestore emulator started in its own process group with the shipped rules, which
# FIRESTORE_EMULATOR_HOST names; the script goes on in the work folder. Also the mirror's position
# as the emulator holds it.
FARESYNC=$(realpath "$1")
REPO=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d)
PROJECT=demo-faresync
JAR=${FIRESTORE_EMULATOR_JAR:-/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar}
EMULATOR_PID=
EMULATOR_STARTED=
BROKER_PID=
. "$HERE/../lib/checks.sh"

# The emulator runs as java directly, in a process group of its own, so that stopping the group
# leaves no JVM behind (its start scripts leave one when only the script is killed). Its port is
# free when chosen, but the JVM binds it seconds later, and another stage's outgoing connection may
# take it in between: a start refused for an address in use tries again, on a new port the first
# time (nothing names the port yet) and on the same port after a restart (the clients name it).
start_emulator() {
  for attempt in 1 2 3 4 5; do
    setsid java -Duser.language=en -cp "$JAR" com.google.cloud.datastore.emulator.firestore.CloudFirestore \
      start --host=127.0.0.1 --port="$PORT" --rules="$REPO/firestore.rules" > "$WORK/emulator.log" 2>&1 &
    EMULATOR_PID=$!
    for _ in $(seq 1 240); do
      curl -fs --max-time 2 "http://127.0.0.1:$PORT/" > /dev/null 2>&1 && { EMULATOR_STARTED=1; return 0; }
      kill -0 "$EMULATOR_PID" 2> /dev/null || break
      sleep 0.25
    done
    grep -q "Address already in use" "$WORK/emulator.log" || break
    echo "the emulator's port $PORT was taken (attempt $attempt)"
    stop_emulator
    if [ -z "$EMULATOR_STARTED" ]; then PORT=$(free_port); else sleep 1; fi
  done
  echo "FAIL the emulator did not start on port $PORT:"; tail -30 "$WORK/emulator.log"; return 1
}

stop_emulator() {
  if [ -n "$EMULATOR_PID" ]; then
    kill -- -"$EMULATOR_PID" 2> /dev/null || kill "$EMULATOR_PID" 2> /dev/null || true
    wait "$EMULATOR_PID" 2> /dev/null || true
    EMULATOR_PID=
  fi
}

mirror_position() { # the mirror's position as the emulator holds it: the greater of its two documents' (0 when none)
  for doc in mirror mirror-1; do
    curl -s --max-time 10 -H "Authorization: Bearer owner" "http://127.0.0.1:$PORT/v1/projects/$PROJECT/databases/(default)/documents/_faresync/$doc" \
      | python3 -c 'import json,sys; print(int(json.load(sys.stdin).get("fields", {}).get("position", {}).get("integerValue", 0)))'
  done | sort -n | tail -1
}
wait_for_position_above() { # N: waits (up to 60 s) until the mirror's position passes N
  for _ in $(seq 600); do [ "$(mirror_position)" -gt "$1" ] && return 0; sleep 0.1; done
  return 1
}

cleanup() {
  stop_emulator
  [ -z "$BROKER_PID" ] || kill "$BROKER_PID" 2> /dev/null || true
  jobs -p | xargs -r kill 2> /dev/null || true # a job may end before its kill
  rm -rf "$WORK"
}
trap cleanup EXIT

if [ ! -f "$JAR" ]; then
  echo "FAIL the Cloud Firestore emulator is not installed ($JAR)"
  exit 1
fi
PORT=$(free_port)
start_emulator
export FIRESTORE_EMULATOR_HOST=127.0.0.1:$PORT
cd "$WORK"
