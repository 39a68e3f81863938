#!/usr/bin/env bash
# Session 27, call 2: the row GEMV's TMA form (kernels/gemv_rows_tma.cuh, LG_QWEN_GEMV_ROWS=2; call
# 1's one-dimensional bulk copies of 256 bytes a row ran the 16-sequence step at 19.9 ms). Its
# kernel tests at 8 and 4 stages; the lane's batched tests on it; then the 8B step of 2 / 8 / 16 /
# 32 sequences at 512 positions against the default (cuBLASLt), two rounds alternated (tma4: a
# ring of 4 stages, two blocks an SM; tmahead: the LM head a row GEMV too), the 0.6B shape once,
# and the launch profile of the 16-sequence step.
set -uo pipefail
source bench/device_env.sh
qwen_tests 'QwenGemvRows.*' || { [ $? = 124 ] && exit 0; }
qwen_tests 'QwenGemvRows.*' LG_QWEN_TMA_STAGES=4
qwen_tests 'HandwrittenBatch.*:*TinyBatch*:*TinyFixture*' LG_QWEN_GEMV_ROWS=2 || { [ $? = 124 ] && exit 0; }
qwen_tests 'HandwrittenBatch.*' LG_QWEN_GEMV_ROWS=2 LG_QWEN_ROWS_HEAD=1
ab_rounds bench.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 30000" \
  base: tma:LG_QWEN_GEMV_ROWS=2 tma4:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4 tmahead:LG_QWEN_GEMV_ROWS=2,LG_QWEN_ROWS_HEAD=1
ab_rounds bench06.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16 --context 512 --kv-tokens 20000" \
  base: tma:LG_QWEN_GEMV_ROWS=2 tma4:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4
LG_PROFILE_LAUNCHES=1 LG_QWEN_GEMV_ROWS=2 timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
  --decode-tokens 4 --batch 16 --context 512 --kv-tokens 20000 > "$out/profile_tma_b16.txt" 2>&1
grep -A12 "bucket 16" "$out/profile_tma_b16.txt" | head -14
exit 0
