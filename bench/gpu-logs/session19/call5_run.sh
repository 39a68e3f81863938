#!/usr/bin/env bash
# Session 19, call 5: q, k and v (one GEMV each over the staged row) share one decode loop
# (LG_COMPILED_GEMV_SHARE, default on; =0 three copies, as in call 4: 118 registers at 8B, 62
# shared). Correctness: compiled_lane_tests (not the 85 s long-context one), the MoE and Qwen
# locks on the compiled lane (logits; in a batch of 16). Then shared / apart alternated twice,
# B = 1 and 16 at 512 positions (8B, 0.6B, 30B-A3B) and one 8B sequence at 32,768 positions.
set -uo pipefail
source bench/device_env.sh
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/lgb/bin/compiled_lane_tests --gtest_filter='-CompiledLane.LongContext*' \
  > "$out/compiled_lane_tests.txt" 2>&1
echo "compiled_lane_tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_compiled.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_compiled.txt"
echo "checks done at ${SECONDS}s"
b1() {  # LABEL [ENV=VALUE...]: the 32,768-position line of an 8B batch-1 bench, compiled lane
  local label=$1
  shift
  local r
  r=$(env "$@" timeout 60 $lg bench --shape qwen3-8b --lane compiled --prompt-len 512 --decode-tokens 32 \
    --context 32768 2>&1 | grep -E '^ +1 +32768')
  echo "$label [$*]: $r" | tee -a "$out/b1_32k.txt"
}
for round in 1 2; do
  for cfg in "shared:" "apart:LG_COMPILED_GEMV_SHARE=0"; do
    label=${cfg%%:*}; knobs=${cfg#*:}
    for shape in qwen3-8b qwen3-0.6b bench/shapes/qwen3-30b-a3b; do step_ms "r$round $label" $shape $knobs; done
    b1 "r$round $label" $knobs
  done
  echo "round $round done at ${SECONDS}s"
done
exit 0
