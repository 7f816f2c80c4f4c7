# Shared by the integration scripts (source it after setting WORK): counted checks, the helpers
# below, and free ports.
#
# The rule every check script follows, so that each check can fail:
#  - a check verifies the positive case before it counts a negative one: "nothing was published"
#    counts only once the log is seen to grow when something is published, a fault only once the
#    process it hits is seen still working, "a member was killed" only once it is seen to have a share;
#  - a check refuses an empty input: an empty export, log or results file fails it (two empty
#    files compare equal, and a check over no lines has nothing to disprove it): `nonempty`, `same`;
#  - a setup step's failure fails the check: a step whose output the checks read runs under `set -e`
#    or through `setup`, never with its exit status dropped (no `|| true` on what a check reads).
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
# nonempty FILE…: succeeds when every FILE exists and is not empty; otherwise names the first that
# is missing or empty (on standard error) and fails.
nonempty() {
  local f
  for f in "$@"; do
    [ -s "$f" ] || { echo "missing or empty: $f" >&2; return 1; }
  done
}
# same EXPECTED ACTUAL: succeeds when both files are there, not empty, and byte for byte the same
# (where they differ goes to standard error).
same() { nonempty "$1" "$2" && cmp "$1" "$2" >&2; }
# setup WHAT COMMAND…: runs a step the checks build on; when it fails, the script stops at once with
# a failure (an EXIT trap still cleans up). Not inside $(…): the exit would leave only the subshell.
setup() {
  local what=$1 status=0; shift
  "$@" || status=$?
  [ "$status" = 0 ] && return 0
  echo "FAIL setup: $what (exit status $status); $passed passed, $((failed + 1)) failed"
  exit 1
}
# wait_url SECONDS URL: succeeds once URL answers 2xx; fails when it has not within SECONDS (each
# try gives up after 2 s, so a server that accepts and never answers cannot stretch the wait).
wait_url() {
  local end=$((SECONDS + $1 + 1))
  while [ "$SECONDS" -lt "$end" ]; do
    curl -fs --max-time 2 "$2" > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# stop_group PID: ends the process group PID leads (a process started with setsid) and reaps its
# leader; stop_process PID: the same for one process. Either does nothing for an empty PID, and
# kills with SIGKILL what has not ended 20 s after SIGTERM, so that a hung process cannot hang the
# check. The statuses of kill and wait are dropped: read in an EXIT trap under errexit, the last of
# an && list would end the trap early and replace the script's own exit status.
stop_group() {
  [ -n "$1" ] || return 0
  kill -TERM -- "-$1" 2> /dev/null || true
  reap_within 20 "$1" "-$1"
}
stop_process() {
  [ -n "$1" ] || return 0
  kill -TERM "$1" 2> /dev/null || true
  reap_within 20 "$1" "$1"
}
# reap_within SECONDS PID TARGET: waits for the child PID to end (a zombie has ended), SIGKILLs
# TARGET (PID or -GROUP) if it has not by then, and reaps PID.
reap_within() {
  local tenths=$(($1 * 10)) state
  while [ "$tenths" -gt 0 ]; do
    state=$(sed 's/.*) //' "/proc/$2/stat" 2> /dev/null | cut -d' ' -f1) || state=
    [ -n "$state" ] && [ "$state" != Z ] || break
    sleep 0.1
    tenths=$((tenths - 1))
  done
  [ "$tenths" -gt 0 ] || kill -KILL -- "$3" 2> /dev/null || true
  wait "$2" 2> /dev/null || true
}
