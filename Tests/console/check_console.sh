#!/usr/bin/env bash
# The console in a browser: `serve` with its in-process pipeline over a fresh store, then
# console_browser.py (Chromium, selenium, axe-core) drives the pages while it plays the app.
# Screenshots go to out/console/. Usage: check_console.sh FARESYNC
set -euo pipefail
FARESYNC=$(realpath "$1")
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d)
PORT=$((20000 + RANDOM % 20000))
SERVER_PID=
stop_server() { [ -n "$SERVER_PID" ] && kill -TERM -- "-$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; SERVER_PID=; }
trap 'stop_server; rm -rf "$WORK"' EXIT
setsid "$FARESYNC" serve --http-port "$PORT" --store "sqlite:$WORK/store.sqlite" --bcrypt-cost 4 --issue-delay 0.5 \
  --sweep-interval 1 >"$WORK/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null || { cat "$WORK/serve.log"; exit 1; }
python3 Tests/console/console_browser.py "http://127.0.0.1:$PORT" out/console || { tail -20 "$WORK/serve.log"; exit 1; }
