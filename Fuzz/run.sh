#!/usr/bin/env bash
# Runs the fuzzer: `Fuzz/run.sh SECONDS`. The corpus starts from the test fixtures and simulated log
# lines and grows in .build-fuzz/corpus. Prints libFuzzer's final statistics.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
bash Fuzz/build.sh
CORPUS=.build-fuzz/corpus
mkdir -p "$CORPUS" .build-fuzz/crashes
cp Tests/FareSyncCoreTests/Fixtures/events/valid/*.json Tests/FareSyncCoreTests/Fixtures/events/invalid/*.json "$CORPUS"/ 2>/dev/null || true
if [ -x .build/debug/faresync ]; then
  { .build/debug/faresync simulate --users 20 --seed 3 --faults 2>/dev/null | head -40 | split -l 1 - "$CORPUS/line-"; } || true
fi
.build-fuzz/fuzz-decoder "$CORPUS" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix=.build-fuzz/crashes/ -print_final_stats=1 2>&1 | tee .build-fuzz/last-run.log | grep -E "^(stat::|#[0-9]+ *DONE|==[0-9]+==|SUMMARY)" || true
if ls .build-fuzz/crashes/crash-* >/dev/null 2>&1; then
  echo "fuzz: crash inputs in .build-fuzz/crashes/"; exit 1
fi
echo "fuzz: corpus $(ls "$CORPUS" | wc -l) inputs"
