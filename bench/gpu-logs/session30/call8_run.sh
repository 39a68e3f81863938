#!/usr/bin/env bash
# Session 30, call 8 (H100): call 7 had tma4 at 32 x 2,048 worse still with no row GEMV on PDL
# (11.9 ms) while PDL off everywhere gave 10.35: the attention's own early start is the suspect
# (its blocks placed on the SMs the qkv GEMV frees first). New knobs: LG_QWEN_ATTN_PDL=0 (the
# batched attention launched without PDL), LG_QWEN_TMA_LATE_TRIGGER=1 (the TMA row GEMV lets the
# next kernel in after its items). Tests on the late trigger, then two rounds.
set -uo pipefail
source bench/device_env.sh
qwen_tests 'HandwrittenBatch.*:QwenGemvRows.*' LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=4 LG_QWEN_TMA_LATE_TRIGGER=1 || { [ $? = 124 ] && exit 0; }
ab_rounds bench.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32 --context 512,2048 --kv-tokens 80000" \
  base: tma4:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4 tma4-attn-nopdl:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4,LG_QWEN_ATTN_PDL=0 \
  tma4-late:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4,LG_QWEN_TMA_LATE_TRIGGER=1 base-attn-nopdl:LG_QWEN_ATTN_PDL=0
exit 0
