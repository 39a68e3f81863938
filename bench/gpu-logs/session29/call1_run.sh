#!/usr/bin/env bash
# Session 29, call 1: session 27's call 2 cut to fit the device time a session of failed starts
# left (one round, the 4-stage variant out): the TMA-fed row GEMV (LG_QWEN_GEMV_ROWS=2) kernel
# and lane tests, then the 8B step of 2 / 8 / 16 / 32 sequences at 512 positions against the
# default (cuBLASLt), the LM head as a row GEMV too (tmahead), the 0.6B shape at 16, and the
# launch profile of the 16-sequence step on the TMA form.
set -uo pipefail
source bench/device_env.sh
qwen_tests 'QwenGemvRows.*' || { [ $? = 124 ] && exit 0; }
qwen_tests 'HandwrittenBatch.*:*TinyBatch*:*TinyFixture*' LG_QWEN_GEMV_ROWS=2 || { [ $? = 124 ] && exit 0; }
ab_rounds bench.txt 1 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 30000" \
  base: tma:LG_QWEN_GEMV_ROWS=2 tmahead:LG_QWEN_GEMV_ROWS=2,LG_QWEN_ROWS_HEAD=1
ab_rounds bench06.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16 --context 512 --kv-tokens 20000" \
  base: tma:LG_QWEN_GEMV_ROWS=2
LG_PROFILE_LAUNCHES=1 LG_QWEN_GEMV_ROWS=2 timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
  --decode-tokens 4 --batch 16 --context 512 --kv-tokens 20000 > "$out/profile_tma_b16.txt" 2>&1
grep -A12 "bucket 16" "$out/profile_tma_b16.txt" | head -14
exit 0
