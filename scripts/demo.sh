#!/usr/bin/env bash
# The README's main job: build lg and complete Python code with the 22M Qwen3 model shipped in the repo.
# Extra arguments go to `lg run` (e.g. --prompt "import numpy" --max-tokens 64 --lane handwritten).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build-release --target lg -j"$(nproc)"
if [ $# -eq 0 ]; then set -- --prompt "def fibonacci(n):" --max-tokens 64; fi
exec ./build-release/src/cli/lg run --model models/qwen3-pycode-22m "$@"
