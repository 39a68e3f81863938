#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (instrumented libraries) and runs one for N seconds,
# growing its corpus in fuzz/corpus-work/NAME; crashers land in fuzz/crashes/NAME.
# Usage: scripts/fuzz.sh NAME [SECONDS]      (keep crashers: copy them into fuzz/corpus/NAME/)
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1; secs=${2:-600}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DLG_FUZZ=ON -DLG_WITH_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
cmake --build build-fuzz --target "$name" -j2
mkdir -p "fuzz/corpus-work/$name" "fuzz/crashes/$name"
"build-fuzz/fuzz/$name" "fuzz/corpus-work/$name" "fuzz/corpus/$name" \
  -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -artifact_prefix="fuzz/crashes/$name/"
