#!/usr/bin/env bash
# Session 22, call 10: call 9's Nsight has 30B-A3B's decode GEMVs latency-bound with 2 KB in
# flight a warp. The existing knobs for more: a batch of 8 loads a lane (LG_COMPILED_GEMV_DEPTH=8;
# session 13: -1% at 30B-A3B, +7% at 0.6B, before the split and the pipelined loop), and two
# batches in flight everywhere (LG_COMPILED_GEMV_PIPE=2). One round each, the default twice.
set -uo pipefail
source bench/device_env.sh
for v in "default:" "depth8:LG_COMPILED_GEMV_DEPTH=8" "pipe2:LG_COMPILED_GEMV_PIPE=2" \
         "depth8pipe2:LG_COMPILED_GEMV_DEPTH=8 LG_COMPILED_GEMV_PIPE=2" "default:"; do
  IFS=: read -r label envs <<< "$v"
  step_ms $label bench/shapes/qwen3-30b-a3b $envs
  step_ms $label qwen3-0.6b $envs
  step_ms $label qwen3-8b $envs
done
exit 0
