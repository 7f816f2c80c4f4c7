#!/usr/bin/env bash
# The console in a browser: `serve` with its in-process pipeline over a fresh store, and
# `faresync console` alone over a replayed store that holds a park-timeout dead letter whose account
# came later (park_timeout_logs.py), then console_browser.py (Chromium, selenium, axe-core) drives
# the pages while it plays the app and crawls them with hostile users. Screenshots go to
# out/console/. Then stream_load.py opens more live streams than a third serve's connection limit.
# Usage: check_console.sh FARESYNC
set -euo pipefail
FARESYNC=$(realpath "$1")
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d)
. Tests/lib/checks.sh
PORT=$(free_port)
DEMO_PORT=$(free_port)
until [ "$DEMO_PORT" != "$PORT" ]; do DEMO_PORT=$(free_port); done
LOAD_PORT=$(free_port)
until [ "$LOAD_PORT" != "$PORT" ] && [ "$LOAD_PORT" != "$DEMO_PORT" ]; do LOAD_PORT=$(free_port); done
PIDS=()
stop_servers() { for pid in "${PIDS[@]}"; do stop_group "$pid"; done; PIDS=(); }
trap 'stop_servers; rm -rf "$WORK"' EXIT
wait_ready() { # wait_ready PORT LOG: until /readyz answers
  wait_url 60 "http://127.0.0.1:$1/readyz" && return 0
  echo "FAIL http://127.0.0.1:$1/readyz did not answer 2xx within 60 s; $2:"
  cat "$2"
  return 1
}
setsid "$FARESYNC" serve --http-port "$PORT" --store "sqlite:$WORK/store.sqlite" --bcrypt-cost 4 --issue-delay 0.5 \
  --sweep-interval 1 >"$WORK/serve.log" 2>&1 &
PIDS+=($!)
python3 Tests/console/park_timeout_logs.py "$FARESYNC" "$WORK/first.jsonl" "$WORK/second.jsonl"
"$FARESYNC" replay "$WORK/first.jsonl" --store "sqlite:$WORK/replayed.sqlite" >/dev/null 2>&1
"$FARESYNC" replay "$WORK/second.jsonl" --store "sqlite:$WORK/replayed.sqlite" >/dev/null 2>&1
setsid "$FARESYNC" console --store "sqlite:$WORK/replayed.sqlite" --http-port "$DEMO_PORT" >"$WORK/demo.log" 2>&1 &
PIDS+=($!)
setsid "$FARESYNC" serve --http-port "$LOAD_PORT" --store "sqlite:$WORK/load.sqlite" --bcrypt-cost 4 --max-connections 40 \
  >"$WORK/load.log" 2>&1 &
PIDS+=($!)
wait_ready "$PORT" "$WORK/serve.log"
wait_ready "$DEMO_PORT" "$WORK/demo.log"
wait_ready "$LOAD_PORT" "$WORK/load.log"
python3 Tests/console/stream_load.py "http://127.0.0.1:$LOAD_PORT" 40 || {
  tail -n 20 "$WORK/load.log"
  exit 1
}
python3 Tests/console/console_browser.py "http://127.0.0.1:$PORT" "http://127.0.0.1:$DEMO_PORT" out/console || {
  tail -n 20 "$WORK/serve.log" "$WORK/demo.log"
  exit 1
}
# A page left open does not hold a server that is told to stop: with a live stream open, SIGTERM ends
# serve and the console within 10 s each.
for port in "$PORT" "$DEMO_PORT"; do
  curl -sN "http://127.0.0.1:$port/console/stream" >"$WORK/stream-$port.out" 2>/dev/null &
  for _ in $(seq 1 100); do grep -q "retry:" "$WORK/stream-$port.out" && break; sleep 0.1; done
  grep -q "retry:" "$WORK/stream-$port.out" || {
    echo "FAIL the console's stream on port $port did not open; it answered:"
    head -c 600 "$WORK/stream-$port.out"
    exit 1
  }
done
for pid in "${PIDS[@]}"; do kill -TERM -- "-$pid"; done
for pid in "${PIDS[@]}"; do
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "FAIL a server with a console page open did not stop within 10 s of SIGTERM"
    kill -KILL -- "-$pid"
    exit 1
  fi
done
PIDS=()
echo "ok   SIGTERM stops serve and the console with a live page open"
