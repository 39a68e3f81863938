#!/usr/bin/env bash
# Session 44, call 5 (any card; call 4's build, default settings): issue 14's serving load once
# with LG_STEP_TRACE (every lane step: start, T rows, B sequences, wall and GPU ms), to see how
# the run's steps split now (session 15 traced it on the H200): call 4's one flash launch for all
# of a step's prompt chunks changed nothing (+0.2%), so how many steps carry several chunks?
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
LG_STEP_TRACE="$out/trace.csv" $lg serve --shape qwen3-8b --max-seq 2048 --max-batch 256 > "$out/serve.log" 2>&1 &
sp=$!
for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
timeout 120 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
  --json "$out/load.json" > "$out/load.txt" 2>&1
grep -E "output|TTFT|ITL|completed" "$out/load.txt"
kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
xz -f "$out/load.json" "$out/trace.csv"
echo "done at ${SECONDS}s"
exit 0
