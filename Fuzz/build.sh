#!/usr/bin/env bash
# Builds the libFuzzer target: the sources of FareSyncEvents (no SQLite, no Crypto) with
# Fuzz/FuzzDecoder.swift, compiled with -sanitize=fuzzer,address into .build-fuzz/fuzz-decoder.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build-fuzz
swiftc -sanitize=fuzzer,address -parse-as-library -package-name FareSync -O -g \
  $(find Sources/FareSyncEvents -name '*.swift' | sort) \
  Fuzz/FuzzDecoder.swift -o .build-fuzz/fuzz-decoder 2>&1 | { grep -v "Cannot export local symbol" || true; }
