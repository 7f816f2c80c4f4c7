#!/usr/bin/env bash
# Builds the libFuzzer target: the decoding sources of FareSyncCore (no SQLite, no Crypto) with
# Fuzz/FuzzDecoder.swift, compiled with -sanitize=fuzzer,address into .build-fuzz/fuzz-decoder.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build-fuzz
CORE=Sources/FareSyncCore
swiftc -sanitize=fuzzer,address -parse-as-library -O -g \
  "$CORE"/JSON/*.swift "$CORE"/Events/*.swift "$CORE"/Log/EventLog.swift "$CORE"/Log/LogLineScanner.swift \
  Fuzz/FuzzDecoder.swift -o .build-fuzz/fuzz-decoder 2>&1 | { grep -v "Cannot export local symbol" || true; }
