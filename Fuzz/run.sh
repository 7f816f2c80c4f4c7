#!/usr/bin/env bash
# Runs the fuzzer: `Fuzz/run.sh SECONDS`. The corpus starts from the test fixtures and simulated log
# lines and grows in .build-fuzz/corpus. Prints libFuzzer's final statistics.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
bash Fuzz/build.sh
CORPUS=.build-fuzz/corpus
mkdir -p "$CORPUS" .build-fuzz/crashes
cp Tests/FareSyncPipelineTests/Fixtures/events/valid/*.json Tests/FareSyncPipelineTests/Fixtures/events/invalid/*.json "$CORPUS"/ 2>/dev/null || true
if [ -x .build/debug/faresync ]; then
  { .build/debug/faresync simulate --users 20 --seed 3 --faults 2>/dev/null | head -40 | split -l 1 - "$CORPUS/line-"; } || true
fi
# Findings of this run only: an earlier run's are kept aside in .build-fuzz/crashes.previous.
rm -rf .build-fuzz/crashes.previous
mv .build-fuzz/crashes .build-fuzz/crashes.previous
mkdir -p .build-fuzz/crashes
# libFuzzer's exit status and every artifact it writes (crash-, timeout-, oom-, leak-, …) count:
# a finding of any kind, or a fuzzer that does not start or does not run, fails the run.
# libFuzzer, not the Swift runtime's backtracer, reports a trap: the backtracer outlives a process
# that ASan ends and keeps the pipe below open, so the run would never end.
set +e
SWIFT_BACKTRACE=enable=no .build-fuzz/release/faresync-fuzz "$CORPUS" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix=.build-fuzz/crashes/ -print_final_stats=1 2>&1 | tee .build-fuzz/last-run.log | grep -E "^(stat::|#[0-9]+ *DONE|==[0-9]+==|SUMMARY)"
status=${PIPESTATUS[0]}
set -e
findings=$(ls .build-fuzz/crashes)
if [ -n "$findings" ]; then
  echo "fuzz: findings in .build-fuzz/crashes/:" $findings; exit 1
fi
if [ "$status" != 0 ]; then
  echo "fuzz: the fuzzer exited with status $status:"; tail -20 .build-fuzz/last-run.log; exit 1
fi
# A build without coverage counters runs, finds nothing and grows no corpus: libFuzzer then says
# no "cov:" at all.
grep -q "INITED cov: [1-9]" .build-fuzz/last-run.log || { echo "fuzz: the fuzzer is not instrumented for coverage"; exit 1; }
nm .build-fuzz/release/faresync-fuzz > .build-fuzz/symbols
grep -q asan.module_ctor .build-fuzz/symbols || { echo "fuzz: the fuzzer is built without AddressSanitizer"; exit 1; }
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' .build-fuzz/last-run.log)
[ "${runs:-0}" -gt 0 ] || { echo "fuzz: the fuzzer ran no input"; tail -20 .build-fuzz/last-run.log; exit 1; }
echo "fuzz: $runs inputs run, corpus $(ls "$CORPUS" | wc -l) inputs"
