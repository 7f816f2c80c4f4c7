#!/usr/bin/env bash
# End-to-end checks of the faresync command line, run by `make test`:
# exit statuses and one-line usage errors, the determinism of docs/reference.md#delivery-and-determinism through the real CLI and
# SQLite store (exports and journals), dead-letter listing and re-drive, and the JSON Schemas (Python's jsonschema) over what
# simulate and export write. (SIGKILL and resume: Tests/crash/crash.sh.)
set -u
FARESYNC=${1:?usage: check_cli.sh PATH-TO-faresync}
FARESYNC=$(cd "$(dirname "$FARESYNC")" && pwd)/$(basename "$FARESYNC")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/Tests/cli
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
. "$ROOT/Tests/lib/checks.sh"

# Usage errors: status 2 and exactly one line on stderr; runtime failures: status 1.
expect_status() {
  local want=$1 lines=$2 name=$3; shift 3
  "$FARESYNC" "$@" >out.txt 2>err.txt
  local got=$?
  local n; n=$(wc -l <err.txt)
  if [ "$got" = "$want" ] && { [ "$lines" = "-" ] || [ "$n" = "$lines" ]; }; then pass "$name (status $got)"; else fail "$name: status $got (want $want), $n stderr lines: $(head -c 300 err.txt)"; fi
}
expect_status 2 1 "unknown flag"            replay --frobnicate x.jsonl
expect_status 2 1 "bad number"              simulate --users many --seed 1
expect_status 2 1 "missing required option" simulate --users 3
expect_status 2 1 "missing input file"      replay no-such-file.jsonl --store memory:
expect_status 2 1 "bad store URL"           replay x.jsonl --store postgres://x
expect_status 2 1 "zero lanes"              replay x.jsonl --lanes 0
expect_status 2 1 "partitions are the broker's, not replay's" replay x.jsonl --partitions 2
grep -q -- "--partitions" err.txt && pass "replay's usage error names --partitions" || fail "replay --partitions: $(head -c 300 err.txt)"
expect_status 2 1 "run: no batches a commit" run --brokers 127.0.0.1:1 --batches-per-commit 0
expect_status 2 1 "run: a sweep interval no duration holds" run --brokers 127.0.0.1:1 --sweep-interval 1e300
expect_status 2 1 "serve: a sweep interval no duration holds" serve --sweep-interval 1e300
expect_status 2 1 "unknown command"         frobnicate
expect_status 2 1 "serve: a port out of range" serve --http-port 70000
expect_status 2 1 "serve: leeway over 300 s" serve --token-leeway 301
expect_status 2 1 "serve: --log with --brokers" serve --brokers 127.0.0.1:1 --log x.jsonl
expect_status 2 1 "token: an empty uid"     token --uid ""
expect_status 2 1 "token: claims not an object" token --uid u1 --claims '[1]'
expect_status 1 1 "rotate-keys of a missing store" rotate-keys --store sqlite:does-not-exist.sqlite
expect_status 1 1 "export of a missing store" export --store sqlite:does-not-exist.sqlite
expect_status 1 1 "unwritable store path"   replay /dev/null --store sqlite:/nonexistent-dir/x.sqlite
expect_status 2 1 "journal retention without a unit" replay x.jsonl --journal-retention 7x
expect_status 2 1 "trace without an id"     trace --store memory:
expect_status 2 1 "dead-letters: an unknown reason" dead-letters list --reason nope --store memory:
expect_status 2 1 "redrive: nothing named"  dead-letters redrive --store memory:
expect_status 2 1 "redrive: ids and --all"  dead-letters redrive 0123456789abcdef --all --store memory:
expect_status 2 1 "run's console on a public address without a token" run --brokers x --http-port 1 --http-host 0.0.0.0
grep -q "set --admin-token to guard the console" err.txt && pass "  ...which names --admin-token" || fail "  ...which does not name --admin-token: $(cat err.txt)"
expect_status 2 1 "run --admin-token owner"  run --brokers x --http-port 1 --admin-token owner
grep -q 'secret other than "owner"' err.txt && pass "  ...which says why" || fail "  ...which does not say why: $(cat err.txt)"
expect_status 0 - "help"                    --help

# The same export however the log is replayed.
setup "simulate" "$FARESYNC" simulate --users 300 --seed 11 --faults --out s.jsonl 2>/dev/null
replay_export() { # NAME ARGS…
  local name=$1; shift
  rm -f "$name.sqlite"*
  "$FARESYNC" replay "$@" --store "sqlite:$name.sqlite" >"$name.summary" && "$FARESYNC" export --store "sqlite:$name.sqlite" --out "$name.export"
}
# The baseline batch by batch; the others (into empty stores, from files) load by account, but for
# inc8 and standard input (whose size is not known before it is read).
replay_export p1 s.jsonl --lanes 1 --no-load-by-account
replay_export p8 s.jsonl --lanes 8
replay_export inc8 s.jsonl --lanes 8 --no-load-by-account
replay_export stdin - --lanes 2 <s.jsonl
awk '{print; print}' s.jsonl >dup.jsonl
replay_export dup dup.jsonl --lanes 3
setup "interleave_topics.py" python3 "$HERE/interleave_topics.py" s.jsonl >mixed.jsonl
replay_export mixed mixed.jsonl --lanes 2
split -n l/3 s.jsonl part-
replay_export parts part-aa part-ab part-ac --lanes 4
[ -s p1.export ] && pass "export written ($(wc -l <p1.export) documents)" || fail "empty export"
for v in p8 inc8 stdin dup mixed parts; do
  if same p1.export "$v.export" 2>/dev/null; then pass "export identical: $v"; else fail "export differs: $v"; fi
done
# The journal settles the same way (docs/reference.md#journal), loaded by account or batch by batch.
"$FARESYNC" trace --comparable --store sqlite:p1.sqlite >p1.settled
[ "$(wc -l <p1.settled)" -gt 1000 ] && pass "journal settlements written ($(wc -l <p1.settled))" || fail "journal settlements: $(wc -l <p1.settled)"
for v in p8 inc8 stdin dup mixed parts; do
  "$FARESYNC" trace --comparable --store "sqlite:$v.sqlite" >"$v.settled"
  if same p1.settled "$v.settled" 2>/dev/null; then pass "journal settles identically: $v"; else fail "journal settles differently: $v"; fi
done
uid=$(grep -m1 -o '"path":"customers/[^/"]*"' p1.export | cut -d/ -f2 | tr -d '"')
"$FARESYNC" trace "$uid" --store sqlite:p1.sqlite >trace.txt
grep -q '"outcome":"applied"' trace.txt && grep -q '"kind":"auth.user.created"' trace.txt && pass "trace $uid: $(wc -l <trace.txt) steps" \
  || fail "trace $uid: $(head -c 300 trace.txt)"
rm -f off.sqlite*
"$FARESYNC" replay s.jsonl --store sqlite:off.sqlite --journal-retention 0 >/dev/null && "$FARESYNC" export --store sqlite:off.sqlite --out off.export
"$FARESYNC" trace --comparable --store sqlite:off.sqlite >off.settled && [ ! -s off.settled ] && same p1.export off.export \
  && pass "--journal-retention 0: no journal, the same export" || fail "--journal-retention 0: $(wc -l <off.settled) entries"

# Dead letters: listed by reason; re-driven in process, each applied, parked again or dead-lettered
# again (its account really came too late), and only the last still listed.
"$FARESYNC" dead-letters list --store sqlite:p1.sqlite >letters.txt
[ "$(wc -l <letters.txt)" = "$(grep -c '"path":"deadLetters/' p1.export)" ] && pass "dead-letters list: every dead letter ($(wc -l <letters.txt))" \
  || fail "dead-letters list: $(wc -l <letters.txt) lines"
"$FARESYNC" dead-letters list --reason park-timeout --store sqlite:p1.sqlite >timeouts.txt
timeouts=$(wc -l <timeouts.txt)
[ "$timeouts" -gt 0 ] && [ "$(grep -c '"reason":"park-timeout"' timeouts.txt)" = "$timeouts" ] && pass "dead-letters list --reason park-timeout ($timeouts)" \
  || fail "dead-letters list --reason: $(head -c 300 timeouts.txt)"
for f in p1.sqlite*; do cp "$f" "redrive${f#p1}"; done
"$FARESYNC" dead-letters redrive --reason park-timeout --store sqlite:redrive.sqlite >redriven.txt
"$FARESYNC" dead-letters list --reason park-timeout --store sqlite:redrive.sqlite >after.txt
again=$(grep -c '"outcome":"dead-lettered"' redriven.txt)
[ "$(grep -c -E '"outcome":"(applied|parked|dead-lettered)"' redriven.txt)" = "$timeouts" ] && [ "$(wc -l <after.txt)" = "$again" ] \
  && { [ "$again" = 0 ] || [ "$(grep -c '"redrives":\[{"requested"' after.txt)" = "$again" ]; } \
  && pass "dead-letters redrive --reason park-timeout:$(grep -o '"outcome":"[a-z-]*"' redriven.txt | sort | uniq -c | tr -s ' \n' ' ')" \
  || fail "dead-letters redrive: $(head -c 300 redriven.txt)"
first=$(head -1 redriven.txt | grep -o '"id":"[0-9a-f]*"' | cut -d'"' -f4)
"$FARESYNC" trace "$first" --store sqlite:redrive.sqlite >redrive-trace.txt
[ "$(tail -1 redrive-trace.txt | grep -c '"redriven":true')" = 1 ] && [ "$(wc -l <redrive-trace.txt)" -ge 2 ] \
  && pass "a re-driven dead letter's trace ends with its re-drive ($(wc -l <redrive-trace.txt) steps)" || fail "trace $first: $(head -c 300 redrive-trace.txt)"
expect_status 1 - "redrive of an unknown id" dead-letters redrive 0123456789abcdef --store sqlite:redrive.sqlite
grep -q "loaded by account" p8.summary && ! grep -q "loaded by account" inc8.summary && ! grep -q "loaded by account" stdin.summary \
  && pass "an empty store from files is loaded by account; batch by batch with --no-load-by-account or from standard input" \
  || fail "load by account taken or not: $(head -1 p8.summary) / $(head -1 inc8.summary) / $(head -1 stdin.summary)"
[ "$(sort s.jsonl | md5sum)" = "$(sort mixed.jsonl | md5sum)" ] && ! cmp -s s.jsonl mixed.jsonl \
  && pass "interleaved log: the same lines as the original, in another order" || fail "the interleaved log is not the original's lines reordered"

# Entur failing 30 % of calls (seeded): every user has the same documents as without failures, or —
# only when its retries ran out — is a dead letter; no user is anything else.
rm -f entur.sqlite*
"$FARESYNC" replay s.jsonl --store sqlite:entur.sqlite --entur-failures 0.3 --entur-seed 5 >/dev/null \
  && "$FARESYNC" export --store sqlite:entur.sqlite --out entur.export
if python3 "$HERE/entur_failures_check.py" p1.export entur.export
then pass "Entur failures: the same users, or dead letters"; else fail "Entur failures changed users"; fi

# Two processes creating the same new store at once (two workers started together) both open it:
# switching a new file to WAL needs an exclusive lock, for which SQLite does not wait by itself.
: >empty.jsonl
racefail=0
for i in $(seq 1 20); do
  rm -f race.sqlite*
  "$FARESYNC" replay empty.jsonl --store sqlite:race.sqlite >/dev/null 2>race-a.err &
  "$FARESYNC" replay empty.jsonl --store sqlite:race.sqlite >/dev/null 2>race-b.err || racefail=$((racefail + 1))
  wait $! || racefail=$((racefail + 1))
done
[ $racefail = 0 ] && pass "two processes opening a new store at once: 20 of 20 pairs succeed" \
  || fail "two processes opening a new store at once: $racefail failures, e.g. $(cat race-a.err race-b.err | head -1)"

# Memory stays bounded on megabyte-sized bad messages: peak RSS of replaying 60 versus 180 of them.
# Three times the data may cost a little more (SQLite's page cache and WAL settle), but a process
# that kept messages would grow by the 120 MiB of data.
python3 "$HERE/memory_bound_check.py" "$FARESYNC" && pass "memory bounded on multi-megabyte messages" || fail "memory grows with multi-megabyte messages"

# The outside oracle: Python's jsonschema over fixtures, logs and exports.
"$FARESYNC" simulate --users 100 --seed 5 --out clean.jsonl 2>/dev/null
if python3 "$ROOT/Tests/schema/check_schemas.py" --fixtures "$ROOT/Tests/FareSyncPipelineTests/Fixtures/events" \
     --strict-log clean.jsonl --log s.jsonl --export p1.export; then pass "JSON Schemas (jsonschema)"; else fail "JSON Schemas"; fi

# The demo runs and says what happened.
if "$FARESYNC" demo --store sqlite:demo.sqlite >demo.txt && grep -q "users created" demo.txt && grep -q "dead-lettered" demo.txt; then
  pass "demo"; else fail "demo: $(head -c 300 demo.txt)"; fi

echo "cli: $passed passed, $failed failed"
[ "$failed" = 0 ]
