#!/usr/bin/env bash
# Session 30, call 4 (H100): call 3's one round had the 4-stage TMA row GEMV (tma4) 5% faster at 16
# and 32 sequences of 512 positions but 12% slower at 32 of 2,048. Two more rounds of 8 / 16 / 32
# sequences at 512 and 2,048 positions, base against tma4, then the launch profile (eager, events
# between kernels: no PDL overlap) of the 32 x 2,048 step on both, to see whether the loss is in a
# kernel or in how the launches overlap.
set -uo pipefail
source bench/device_env.sh
ab_rounds bench.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16,32 --context 512,2048 --kv-tokens 80000" \
  base: tma4:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4
for v in base tma4; do
  env $([ $v = tma4 ] && echo LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=4) LG_PROFILE_LAUNCHES=1 timeout 100 $lg bench --shape qwen3-8b \
    --lane handwritten --prompt-len 8 --decode-tokens 4 --batch 32 --context 2048 --kv-tokens 80000 > "$out/profile_${v}_b32_2048.txt" 2>&1
  echo "== $v"; grep -A9 "bucket 32" "$out/profile_${v}_b32_2048.txt" | head -10
done
exit 0
