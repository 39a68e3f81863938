#!/usr/bin/env bash
# Session 22, call 6: the decode GEMVs' L2 prefetch before the wait over more of each warp's
# rows (LG_COMPILED_GEMV_PREFETCH bytes of each of its first LG_COMPILED_GEMV_PREFETCH_ROWS
# outputs). Nsight (call 2) put 30B-A3B's q/k/v (21 MB) at 10.1 us and o_proj (16.8 MB) at 7.9:
# about 2 TB/s, their prologue (the RMSNorm, the staged row) ahead of the stream. The step at
# 30B-A3B (twice), 8B and 0.6B under each setting.
set -uo pipefail
source bench/device_env.sh
for v in "default:" "b4096r1:LG_COMPILED_GEMV_PREFETCH=4096" "b4096r2:LG_COMPILED_GEMV_PREFETCH=4096 LG_COMPILED_GEMV_PREFETCH_ROWS=2" \
         "b8192r4:LG_COMPILED_GEMV_PREFETCH=8192 LG_COMPILED_GEMV_PREFETCH_ROWS=4"; do
  IFS=: read -r label envs <<< "$v"
  step_ms $label bench/shapes/qwen3-30b-a3b $envs
  step_ms $label qwen3-8b $envs
  step_ms $label qwen3-0.6b $envs
done
for v in "default:" "b4096r2:LG_COMPILED_GEMV_PREFETCH=4096 LG_COMPILED_GEMV_PREFETCH_ROWS=2"; do
  IFS=: read -r label envs <<< "$v"
  step_ms $label bench/shapes/qwen3-30b-a3b $envs
done
exit 0
