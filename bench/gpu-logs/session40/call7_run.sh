#!/usr/bin/env bash
# Session 40, call 7 (H200): issue 13's long-context bar (one 8B sequence at 32,768 positions, both
# lanes, against the step's floor) and the 0.6B shape's lines at 1-128 sequences, both lanes.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
b1_32k main handwritten
b1_32k main compiled
for lane in handwritten compiled; do
  echo "== 0.6B $lane"
  timeout 90 $lg bench --shape qwen3-0.6b --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 160,512 \
    --kv-tokens 80000 --lane $lane 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ "
done | tee "$out/bench_06b.txt"
exit 0
