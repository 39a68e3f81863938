#!/usr/bin/env bash
# Session 45, call 1 (any card): the one-token experts pair (issue 16; LaunchPlan::experts_pair,
# LG_COMPILED_MOE_PAIR=1 asks for it, =0 for the two launches as before). Carries .carry/lg.tar.xz (lg and
# compiled_lane_tests, LG_BUNDLE_FIXTURES=tiny-qwen3-moe) and .carry/moe_fused_lab (the lab,
# bench/labs/moe_fused_lab.cu, built with its Build line). In order of need (device minutes were
# short this session):
#   1. the MoE probe tests (the wide-rows probe runs the pair at one token against the staged
#      executor) and the MoE lock with --compare-logits;
#   2. the 30B-A3B one-token decode step (512 positions), pair on and off;
#   3. the lab: today's two launches against the fused forms, 48 layers;
#   4. compute-sanitizer memcheck of the wide-rows probe;
#   5. a second A/B round; the step without the top-k launch (what fusing it away could save at most).
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
LG_COMPILED_MOE_PAIR=1 LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/lgb/bin/compiled_lane_tests --gtest_filter='CompiledMoeProbe.*' \
  > "$out/moe_probe.txt" 2>&1
echo "moe probes rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|OK \]" "$out/moe_probe.txt" | head -12
LG_COMPILED_MOE_PAIR=1 timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits \
  > "$out/moe_lock.txt" 2>&1
grep -E '^(ok|FAIL|ERROR)' "$out/moe_lock.txt" | head -3
a30="--shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000"
bench_ms pair ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=1
bench_ms two_launches ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=0
timeout 60 ./.carry/moe_fused_lab 48 30 2>&1 | tee "$out/lab.txt"
LG_COMPILED_MOE_PAIR=1 LG_SHARED_DIR=/tmp/lgshared timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
  /tmp/lgb/bin/compiled_lane_tests --gtest_filter='CompiledMoeProbe.WideExpertRows*' > "$out/memcheck_wide.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_wide.txt" | head -5
bench_ms pair ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=1
bench_ms two_launches ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=0
bench_ms skip_topk ab30.txt '1 +512' "$a30" 'LG_COMPILED_SKIP=_topk$'
