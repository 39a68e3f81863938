#!/usr/bin/env bash
# Session 23, call 7: the topk run by the router GEMV's last block at T = 1, its launch left out
# (Renderer::gemm_topk_tail, LaunchPlan::decode_folded; LG_COMPILED_TOPK_TAIL=0 keeps the launch).
# compiled_lane_tests (all but the 85 s long-context test: the MoE probes compare the topk's
# stores after the left-out launch, i.e. the tail's) and the compiled locks; memcheck of the MoE
# probes; the 30B-A3B step with and without the tail, alternated three times; 8B and 0.6B once.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
moe_memcheck
for round in 1 2 3; do
  step_ms tail bench/shapes/qwen3-30b-a3b
  step_ms launch bench/shapes/qwen3-30b-a3b LG_COMPILED_TOPK_TAIL=0
done
step_ms tail qwen3-8b
step_ms tail qwen3-0.6b
exit 0
