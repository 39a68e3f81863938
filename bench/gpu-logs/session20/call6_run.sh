#!/usr/bin/env bash
# Session 20, call 6: the candidate binary (storedview, halves, batched prologue; the next-output
# prefetch and the split-KV half rounds gone). Runtime knobs for one 8B sequence at 32,768
# positions: the tensor-core split-KV form from one row on (LG_COMPILED_ATTN_WIDE_ROWS=1; 4 query
# heads a block, so each K/V row is read by one block, not two), its CUDA-core wide form, and more
# blocks an SM. Both lanes' 512-position lines in the same call.
set -uo pipefail
source bench/device_env.sh
for r in 1 2; do
  step_ms "new" qwen3-8b
  step_ms "wide_rows=1" qwen3-8b LG_COMPILED_ATTN_WIDE_ROWS=1
  step_ms "wide_rows=1 heads" qwen3-8b LG_COMPILED_ATTN_WIDE_ROWS=1 LG_COMPILED_ATTN_WIDE_FORM=heads
done
for r in 1 2; do
  b1_32k new compiled
  b1_32k wide_rows=1 compiled LG_COMPILED_ATTN_WIDE_ROWS=1
  b1_32k "wide_rows=1 heads" compiled LG_COMPILED_ATTN_WIDE_ROWS=1 LG_COMPILED_ATTN_WIDE_FORM=heads
  b1_32k bps=4 compiled LG_COMPILED_ATTN_BPS=4
done
b1_32k hw handwritten
timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 2 --batch 1,16 --context 512 --kv-tokens 12000 \
  > "$out/hw_512.txt" 2>&1
grep -E "^ +[0-9]+ +512" "$out/hw_512.txt"
exit 0
