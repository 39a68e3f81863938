#!/usr/bin/env bash
# Session 48, call 2 (H200 only: prints the card and exits on any other). Same binaries as call 1.
# Issue 13 on this card: session 47's call 1 A/B (default, rows form's early loads, LM head as a
# row GEMV, both, v10 attention, no rows form) at 8 and 16 sequences x 256 and 512 positions,
# two rounds, after the rows tests under the early loads.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu" | tee "$out/gpu.txt"
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200"; exit 0 ;; esac
qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_EARLY=1 | tail -4
ab_rounds ab_16x512.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16 --context 256,512 --kv-tokens 40000" \
  default: early:LG_QWEN_ROWS_EARLY=1 rowshead:LG_QWEN_ROWS_HEAD=1 both:LG_QWEN_ROWS_EARLY=1,LG_QWEN_ROWS_HEAD=1 \
  v10:LG_QWEN_ATTN_V10=2 norows:LG_QWEN_ATTN_ROWS=0
exit 0
