#!/usr/bin/env bash
# Session 23, call 8: the session's binary (the topk stage's warp form at one row, block form at
# more; the new-user fixes merged). compiled_lane_tests (all but the 85 s long-context test) and
# the compiled locks; memcheck of the MoE probes; the 30B-A3B step against the warp form at every
# T (LG_COMPILED_TOPK_BLOCK=0), alternated three times; 8B and 0.6B once.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
moe_memcheck
for round in 1 2 3; do
  step_ms hybrid bench/shapes/qwen3-30b-a3b
  step_ms warp bench/shapes/qwen3-30b-a3b LG_COMPILED_TOPK_BLOCK=0
done
step_ms hybrid qwen3-8b
step_ms hybrid qwen3-0.6b
exit 0
