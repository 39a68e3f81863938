#!/usr/bin/env bash
# Session 38, call 3 (and later tries): on an H200 only, the waiting question
# (h200_rows_and_bars: the TMA row GEMV against cuBLASLt at 2-32 sequences, issue 13's 8B bars)
# and session 37's call 7 A/B there (v10 in 2-warp blocks against LG_QWEN_V10_WARPS=4).
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu"
case "$gpu" in *H200*) ;; *) exit 0 ;; esac
h200_rows_and_bars
ab_rounds ab_v10_h200.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 48,64 --context 1024,2048,4096 --kv-tokens 300000" \
  two: four:LG_QWEN_V10_WARPS=4
exit 0
