#!/usr/bin/env bash
# Session 45, call 1 (any card): the one-token experts pair (issue 16; LaunchPlan::experts_pair,
# LG_COMPILED_MOE_PAIR=0 for the two launches as before). Carries .carry/lg.tar.xz (lg and
# compiled_lane_tests, LG_BUNDLE_FIXTURES=tiny-qwen3-moe) and .carry/moe_fused_lab (the lab,
# bench/labs/moe_fused_lab.cu, built with its Build line).
#   1. the lab: today's two launches against the fused forms, 48 layers;
#   2. the MoE probe tests (the wide-rows probe runs the pair at one token against the staged
#      executor) and the MoE lock with --compare-logits, pair on and off;
#   3. compute-sanitizer memcheck of the wide-rows probe;
#   4. the 30B-A3B decode step, pair on and off, alternated twice.
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
timeout 120 ./.carry/moe_fused_lab 48 30 2>&1 | tee "$out/lab.txt"
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/lgb/bin/compiled_lane_tests --gtest_filter='CompiledMoeProbe.*' \
  > "$out/moe_probe.txt" 2>&1
echo "moe probes rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|OK \]" "$out/moe_probe.txt" | head -12
for pair in 1 0; do
  LG_COMPILED_MOE_PAIR=$pair timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared \
    --compare-logits > "$out/moe_lock_pair$pair.txt" 2>&1
  echo "pair=$pair: $(grep -E '^(ok|FAIL|ERROR)' "$out/moe_lock_pair$pair.txt" | head -3)"
done
LG_SHARED_DIR=/tmp/lgshared timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
  /tmp/lgb/bin/compiled_lane_tests --gtest_filter='CompiledMoeProbe.WideExpertRows*' > "$out/memcheck_wide.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_wide.txt" | head -5
for round in 1 2; do
  step_ms pair bench/shapes/qwen3-30b-a3b
  step_ms two_launches bench/shapes/qwen3-30b-a3b LG_COMPILED_MOE_PAIR=0
done
