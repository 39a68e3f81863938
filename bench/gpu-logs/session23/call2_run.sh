#!/usr/bin/env bash
# Session 23, call 2: the topk folded into the experts launches at T = 1 (LaunchPlan::decode_folded;
# LG_COMPILED_FOLD_TOPK=0 keeps its launch). compiled_lane_tests (the MoE ones and the rest but the
# 85 s long-context test) and the compiled locks, then the 30B-A3B step folded and not,
# alternated three times; 8B and 0.6B (no topk: unchanged programs) once.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
for round in 1 2 3; do
  step_ms fold bench/shapes/qwen3-30b-a3b
  step_ms nofold bench/shapes/qwen3-30b-a3b LG_COMPILED_FOLD_TOPK=0
done
step_ms fold qwen3-8b
step_ms fold qwen3-0.6b
exit 0
