#!/usr/bin/env bash
# Session 38, call 7: v8's rows form issuing each warp's first keys' loads before it forms the
# queries (LG_QWEN_ROWS_EARLY=1, branch s38-rows-early; call 2 found 11% of its warp time in the
# prologue and its barrier at 16 x 512): the attention, batch and mixed tests with it, then the
# step against the default, 8B and 0.6B, 16-64 sequences of 256-512 positions (the rows forms'
# range). On an H200, then the waiting question (h200_rows_and_bars).
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu"
qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_EARLY=1 | tail -4
ab_rounds ab_early_8b.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16,32,64 --context 256,512 --kv-tokens 60000" \
  old: early:LG_QWEN_ROWS_EARLY=1
ab_rounds ab_early_06b.txt 2 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16,32,64 --context 256,512 --kv-tokens 60000" \
  old: early:LG_QWEN_ROWS_EARLY=1
case "$gpu" in *H200*) h200_rows_and_bars ;; esac
exit 0
