#!/usr/bin/env bash
# Session 46, call 2 (H200 only): session 42's call 1 (issue 13's 8B B=16 bar at 512 positions,
# 5.10 ms on the H200 in session 40 against 5.0): the rows form issuing its first keys' loads before
# the queries (LG_QWEN_ROWS_EARLY=1; this bundle is built with session 38's call7_rows_early.patch)
# and main's other attention/LM-head knobs against the default, two rounds alternated; then Nsight's
# kernel durations of the 16 x 512 step if the call's time allows.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200"; exit 0 ;; esac
qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_EARLY=1 | tail -4
ab_rounds ab_16x512.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16 --context 256,512 --kv-tokens 40000" \
  default: early:LG_QWEN_ROWS_EARLY=1 v10:LG_QWEN_ATTN_V10=2 rowshead:LG_QWEN_ROWS_HEAD=1 norows:LG_QWEN_ATTN_ROWS=0
ncu_durations ncu_16x512 300 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16 --context 512 --kv-tokens 40000"
exit 0
