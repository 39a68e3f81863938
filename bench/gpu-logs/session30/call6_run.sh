#!/usr/bin/env bash
# Session 30, call 6 (H100): call 5 found tma4's loss at 32 x 2,048 gone with PDL off (10.35 ms
# against 11.46 with it, base 10.25), so it is in how the launches overlap. Two new lab knobs:
# LG_QWEN_ATTN_LATE_TRIGGER=1 (the batched rows attention forms, v8 and v10, let the next launch's
# blocks in after their keys instead of at their start) and LG_QWEN_ROWS_PDL_MASK (which row GEMVs
# take PDL: qkv 1, o 2, gate/up 4, down 8). Tests on the late trigger, then two rounds.
set -uo pipefail
source bench/device_env.sh
qwen_tests 'HandwrittenBatch.*:*DecodeAttention*:QwenMixedAttention.*' LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=4 LG_QWEN_ATTN_LATE_TRIGGER=1 || { [ $? = 124 ] && exit 0; }
ab_rounds bench.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32 --context 512,2048 --kv-tokens 80000" \
  base: tma4:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4 tma4-late:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4,LG_QWEN_ATTN_LATE_TRIGGER=1 \
  tma4-o-nopdl:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4,LG_QWEN_ROWS_PDL_MASK=13 tma4-qkv-nopdl:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4,LG_QWEN_ROWS_PDL_MASK=14
exit 0
