#!/usr/bin/env bash
# Builds the libFuzzer target through SwiftPM: `faresync-fuzz` (Fuzz/FuzzDecoder.swift over
# FareSyncEvents, so no SQLite and no Crypto), which Package.swift declares when FARESYNC_FUZZ is set.
# `--sanitize fuzzer` links libFuzzer's `main` as the entry point. Both sanitizers are named in one
# `-sanitize=` flag: swiftc keeps only the last `-sanitize=` it is given, and SwiftPM passes its
# `--sanitize` options in no fixed order, so two of them build without coverage about half the time.
# The build has a folder of its own (.build-fuzz), so that the sanitizers never reach the one in .build.
set -euo pipefail
cd "$(dirname "$0")/.."
FARESYNC_FUZZ=1 swift build -c release --scratch-path .build-fuzz --product faresync-fuzz \
  --sanitize fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -g 2>&1 \
  | { grep -v -e "Cannot export local symbol" -e "'swift-distributed-tracing': found" -e "swift-distributed-tracing/.*/CMakeLists.txt$" || true; }
