#!/usr/bin/env bash
# Session 46, call 1 (any card): session 45's call 1 reordered so a short machine still answers
# the main question first (issue 16, the one-token experts pair, LG_COMPILED_MOE_PAIR=1 on, =0 off).
# Carries .carry/lg.tar.xz (lg, compiled_lane_tests, qwen_lane_tests; LG_BUNDLE_FIXTURES=tiny-qwen3-moe;
# built with session 38's call7_rows_early.patch, a lab knob left off here) and .carry/moe_fused_lab.
#   1. the wide-rows MoE probe with the pair on (the pair at one token against the staged executor);
#   2. the 30B-A3B one-token step (512 positions), pair on and off;
#   3. the lab (two launches against fused forms, 48 layers);
#   4. every MoE probe and the MoE lock (--compare-logits) with the pair on; memcheck of the wide probe;
#   5. a second A/B round; the step without the top-k launch.
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
LG_COMPILED_MOE_PAIR=1 LG_SHARED_DIR=/tmp/lgshared timeout 90 /tmp/lgb/bin/compiled_lane_tests \
  --gtest_filter='CompiledMoeProbe.WideExpertRows*' > "$out/moe_probe_wide.txt" 2>&1
echo "wide probe rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|OK \]" "$out/moe_probe_wide.txt" | head -4
a30="--shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000"
bench_ms pair ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=1
bench_ms two_launches ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=0
timeout 60 ./.carry/moe_fused_lab 48 30 > "$out/lab.txt" 2>&1; tail -8 "$out/lab.txt"
LG_COMPILED_MOE_PAIR=1 LG_SHARED_DIR=/tmp/lgshared timeout 150 /tmp/lgb/bin/compiled_lane_tests --gtest_filter='CompiledMoeProbe.*' \
  > "$out/moe_probe.txt" 2>&1
echo "moe probes rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/moe_probe.txt" | head -6
LG_COMPILED_MOE_PAIR=1 timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits \
  > "$out/moe_lock.txt" 2>&1
grep -E '^(ok|FAIL|ERROR)' "$out/moe_lock.txt" | head -3
LG_COMPILED_MOE_PAIR=1 LG_SHARED_DIR=/tmp/lgshared timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
  /tmp/lgb/bin/compiled_lane_tests --gtest_filter='CompiledMoeProbe.WideExpertRows*' > "$out/memcheck_wide.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_wide.txt" | head -5
bench_ms pair ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=1
bench_ms two_launches ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=0
bench_ms skip_topk ab30.txt '1 +512' "$a30" 'LG_COMPILED_SKIP=_topk$'
