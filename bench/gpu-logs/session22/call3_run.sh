#!/usr/bin/env bash
# Session 22, call 3: moe_down's one-token form loads its routed rows before the wait on
# moe_gate_up (LG_COMPILED_MOE_EARLY_ROWS; the indices are settled two launches back). Checks:
# compiled_lane_tests (the 32k test left out) and the compiled lane's locks; then the 30B-A3B step
# with the early rows on and off, alternated three times, and the 0.6B/8B steps (no MoE: unchanged
# programs) once as yardsticks.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
shape=bench/shapes/qwen3-30b-a3b
for r in 1 2 3; do
  step_ms early $shape
  step_ms late $shape LG_COMPILED_MOE_EARLY_ROWS=0
done
LG_PROFILE_LAUNCHES=1 timeout 100 $lg bench --shape $shape --lane compiled --prompt-len 2 --batch 1 --context 512 \
  --kv-tokens 12000 --decode-tokens 16 > "$out/profile_b1.txt" 2>&1
grep -A10 "compiled lane T=1 B=1" "$out/profile_b1.txt" | head -11
exit 0
