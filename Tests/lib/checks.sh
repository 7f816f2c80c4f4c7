# Shared by the integration scripts (source it after setting WORK): counted checks and free ports.
passed=0
failed=0

pass() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
# check NAME COMMAND…: passes when the command exits 0; prints its last line, or its last 30 on failure.
check() {
  local name=$1; shift
  if "$@" > "$WORK/last.log" 2>&1; then
    pass "$name"; tail -1 "$WORK/last.log" | sed 's/^/     /'
  else
    fail "$name"; sed 's/^/     /' "$WORK/last.log" | tail -30
  fi
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
