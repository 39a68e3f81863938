#!/usr/bin/env bash
# Session 22, call 7: the decode GEMVs' split-K target (LG_COMPILED_GEMV_SPLIT_WARPS: stages of few
# outputs take 2, 4 or 8 warps an output until the step has this many warps; 4,096 today). At
# 30B-A3B, 8,192 splits q/k/v in 2 and o_proj in 4; 16,384 in 4 and 8. The step at 30B-A3B
# (twice), 8B and 0.6B under each target.
set -uo pipefail
source bench/device_env.sh
for r in 1 2; do
  for w in 4096 8192 16384; do
    step_ms w$w bench/shapes/qwen3-30b-a3b LG_COMPILED_GEMV_SPLIT_WARPS=$w
  done
done
for w in 4096 8192 16384; do
  step_ms w$w qwen3-8b LG_COMPILED_GEMV_SPLIT_WARPS=$w
  step_ms w$w qwen3-0.6b LG_COMPILED_GEMV_SPLIT_WARPS=$w
done
exit 0
