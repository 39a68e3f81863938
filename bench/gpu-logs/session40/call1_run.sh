#!/usr/bin/env bash
# Session 40, call 1: on an H200 (none lent since session 31), the question waiting since
# session 35 (h200_rows_and_bars: the TMA row GEMV against cuBLASLt at 2-32 sequences, then
# issue 13's 8B bars at the default and on the TMA form), then issue 16's 30B-A3B step at B = 1
# and 16 on the compiled lane. On any other card only the 30B-A3B line.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader)
echo "$gpu"
case "$gpu" in *H200*) s=$(date +%s); h200_rows_and_bars; echo "took $(( $(date +%s) - s )) s" ;; esac
step_ms main bench/shapes/qwen3-30b-a3b | tee "$out/step_30b.txt"
exit 0
