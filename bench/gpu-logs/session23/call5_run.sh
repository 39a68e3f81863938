#!/usr/bin/env bash
# Session 23, call 5: the topk stage as a block per row (Renderer::topk_block_stage: keys in shared
# memory, each element's rank the count of larger keys; the softmax's reductions block-wide)
# against the warp form (LG_COMPILED_TOPK_BLOCK=0). compiled_lane_tests (all but the 85 s
# long-context test; the warp form's new probe too) and the compiled locks; memcheck of the MoE
# probes; the 30B-A3B step both ways alternated three times; the topk launch's cost in the graph
# again (LG_COMPILED_SKIP); 8B and 0.6B once (no topk: the same programs).
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
moe_memcheck
for round in 1 2 3; do
  step_ms block bench/shapes/qwen3-30b-a3b
  step_ms warp bench/shapes/qwen3-30b-a3b LG_COMPILED_TOPK_BLOCK=0
done
step_ms "block, no topk launch" bench/shapes/qwen3-30b-a3b LG_COMPILED_SKIP='^k16_topk$'
step_ms block qwen3-8b
step_ms block qwen3-0.6b
exit 0
