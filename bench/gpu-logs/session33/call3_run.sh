#!/usr/bin/env bash
# Session 33, calls 3 and 4 (same machine): the batched decode's projections on cuBLASLt (the
# default) against the TMA row GEMV (LG_QWEN_GEMV_ROWS=2) on this H100, two rounds alternated.
set -uo pipefail
source bench/device_env.sh
# call 3
ab_rounds gemv_rows.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  cublaslt: tma:LG_QWEN_GEMV_ROWS=2
# call 4
ab_rounds gemv_rows_06b.txt 2 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,2,8,16,32,64 --context 512 --kv-tokens 40000" \
  cublaslt: tma:LG_QWEN_GEMV_ROWS=2
ab_rounds gemv_rows_8b_160.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,16,64 --context 160 --kv-tokens 40000" \
  cublaslt: tma:LG_QWEN_GEMV_ROWS=2
