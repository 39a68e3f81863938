#!/usr/bin/env bash
# Session 39, call 2: session 38's call 7, which found no machine: v8's rows form issuing each
# warp's first keys' loads before it forms the queries (LG_QWEN_ROWS_EARLY=1; 11% of its warp time
# was in the prologue and its barrier at 16 x 512 on the H100). The attention, batch and mixed
# tests with it, then the step against the default, 8B and 0.6B, 16-64 sequences of 256-512
# positions (the rows form's range).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_EARLY=1 | tail -4
ab_rounds ab_early_8b.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16,32,64 --context 256,512 --kv-tokens 60000" \
  old: early:LG_QWEN_ROWS_EARLY=1
ab_rounds ab_early_06b.txt 2 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16,32,64 --context 256,512 --kv-tokens 60000" \
  old: early:LG_QWEN_ROWS_EARLY=1
exit 0
