#!/usr/bin/env bash
# Session 30, call 7 (H100): call 6's late attention trigger and o / qkv without PDL left tma4's
# 32 x 2,048 loss as it was; the gate/up and down row GEMVs without PDL (masks 11, 7), and none of
# the row GEMVs with it (0), two rounds.
set -uo pipefail
source bench/device_env.sh
ab_rounds bench.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32 --context 512,2048 --kv-tokens 80000" \
  base: tma4:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4 tma4-gu-nopdl:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4,LG_QWEN_ROWS_PDL_MASK=11 \
  tma4-dn-nopdl:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4,LG_QWEN_ROWS_PDL_MASK=7 tma4-rows-nopdl:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4,LG_QWEN_ROWS_PDL_MASK=0
exit 0
