#!/usr/bin/env bash
# The README's test command: install packages if missing, configure, build, run every test (ctest).
# Tests that need a GPU skip on a machine without one and say so.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON
cmake --build build-release -j"$(nproc)"
ctest --test-dir build-release --output-on-failure -j"$(nproc)"
